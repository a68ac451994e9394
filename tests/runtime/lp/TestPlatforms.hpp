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

}  // namespace treefarm::lp::testing
