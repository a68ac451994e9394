#pragma once
/// @file PlanStudy.hpp
/// `treefarm experiment plan`: the planners on generated multi-LAN sets, evaluated with
/// the steady-state LP. Results in docs/results/plan.md.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace treefarm::lab::planning {

struct PlanStudyOptions {
  std::string out_dir = "out/plan-study";   ///< plan-study.json and plan-study.md.
  std::vector<std::uint32_t> small_sizes = {4, 5, 6, 7};  ///< Machines of the exhaustive part.
  std::uint32_t small_sets = 20;            ///< Sets per small size.
  std::vector<std::uint32_t> large_sizes = {16, 64, 256, 1000};
  std::uint32_t large_sets = 3;             ///< Sets per large size.
  std::uint32_t qos_machines = 32;          ///< Machines of the QoS-failure part.
  std::uint32_t qos_sets = 10;
  double rmshc_seconds = 30;                ///< RMSHC budget per plan (seconds).
  std::uint64_t seed = 1;
  std::string command;                      ///< Command line, written into the report.
};

/// Runs the study, prints the Markdown report and writes OUT/plan-study.{md,json}.
int plan_study(const PlanStudyOptions& options, std::ostream& out);

}  // namespace treefarm::lab::planning
