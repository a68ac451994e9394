#pragma once
// Shared helpers of the planner tests: small machine sets and applications.
#include <vector>

#include "runtime/model/Application.hpp"
#include "runtime/plan/MachineGenerator.hpp"
#include "runtime/plan/MachineSet.hpp"

namespace treefarm::plan::test {

/// Two abstract applications: a low-CCR one (16 MB, 20 Gflop) and a high-CCR one
/// (16 MB, 1 Gflop), weight 1 each.
inline std::vector<model::AppSpec> two_apps() {
  model::AppSpec a;
  a.name = "low";
  a.kernel = model::Kernel::abstract;
  a.bytes = 16'000'000;
  a.flops = 20e9;
  a.tasks = 100;
  model::AppSpec b = a;
  b.name = "high";
  b.flops = 1e9;
  return {a, b};
}

inline MachineSet generated(std::uint32_t machines, std::uint32_t lans, std::uint64_t seed) {
  GenMachinesOptions o;
  o.machines = machines;
  o.lans = lans;
  o.seed = seed;
  return generate_machines(o);
}

}  // namespace treefarm::plan::test
