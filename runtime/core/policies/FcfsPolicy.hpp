#pragma once
/// @file FcfsPolicy.hpp
/// First Come First Served (papers/beaumont2006 §4.2): requests are fulfilled in the
/// order they arrived, with the tasks in the order they came from the parent. The root
/// picks task types with the 1D mechanism and the weights (Policy's default).
/// Where the paper is silent: under the one-port model, while the port is busy with a
/// send, the oldest request of the local executor is served first (it needs no port).

#include "runtime/core/Policy.hpp"

namespace treefarm::core {

class FcfsPolicy final : public Policy {
 public:
  std::optional<Assignment> select(const NodeState& state) override;
};

}  // namespace treefarm::core
