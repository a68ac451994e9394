#pragma once
// Small hand-built platforms for the lp tests.
#include <limits>
#include <string>
#include <vector>

#include "runtime/lp/PlatformModel.hpp"

namespace treefarm::lp::testing {

inline constexpr double inf = std::numeric_limits<double>::infinity();

/// Builds a PlatformModel node by node.
struct Builder {
  PlatformModel m;

  Builder& app(std::string name, double bytes, double weight = 1.0, std::uint32_t cores_per_task = 1) {
    m.apps.push_back({std::move(name), bytes, weight, cores_per_task});
    return *this;
  }
  /// Adds a node; `seconds` has one task duration per application added so far.
  int node(std::string name, int parent, std::uint32_t cores, double bandwidth,
           std::vector<double> seconds, double max_out = inf) {
    m.nodes.push_back({std::move(name), parent, cores, parent < 0 ? inf : bandwidth,
                       std::move(seconds), max_out});
    return static_cast<int>(m.nodes.size()) - 1;
  }
  Builder& comm(model::CommModel c) {
    m.comm_model = c;
    return *this;
  }
};

/// A worker of one_host(): its name and a task's seconds per application.
struct Worker {
  std::string name;
  std::vector<double> seconds;
};

/// What was measured of one_host()'s host (PlatformModel::Host's fields of the same names).
struct HostFigures {
  double comm_cpu_seconds_per_byte = 0;   ///< CPU-s per byte moved between two of its nodes
  std::vector<double> task_cpu_seconds = {};  ///< CPU-s of a whole task, per application
  double busy_share = 1.0;
};

/// The applications of `apps` computed by one-core `workers` under a forwarding master,
/// multi-port over unbounded links, every node on one host "here" of 2 CPUs.
inline PlatformModel one_host(Builder apps, const std::vector<Worker>& workers, const HostFigures& figures = {}) {
  apps.comm(model::CommModel::multi_port);
  apps.node("master", -1, 0, inf, std::vector<double>(apps.m.apps.size(), inf));
  for (const auto& w : workers) apps.node(w.name, 0, 1, inf, w.seconds);
  apps.m.hosts.push_back(
      PlatformModel::Host{"here", 2.0, figures.comm_cpu_seconds_per_byte, 0, 0, figures.task_cpu_seconds, figures.busy_share});
  for (auto& n : apps.m.nodes) n.host = 0;
  return apps.m;
}

/// The a-posteriori tests' shared host: "job" (1 MB a task) on two one-core workers w1 and
/// w2 of 1 s tasks, one_host() with `comm_cpu_per_byte` CPU-s per byte moved; with none the
/// optimum is 2 tasks/s.
inline PlatformModel shared_host(double comm_cpu_per_byte = 0) {
  return one_host(Builder{}.app("job", 1e6), {{"w1", {1.0}}, {"w2", {1.0}}},
                  {.comm_cpu_seconds_per_byte = comm_cpu_per_byte});
}

}  // namespace treefarm::lp::testing
