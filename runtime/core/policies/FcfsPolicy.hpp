#pragma once
/// @file FcfsPolicy.hpp
/// First Come First Served (papers/beaumont2006 §4.2): requests are fulfilled in the
/// order they arrived, with the tasks in the order they came from the parent. The root
/// picks task types with the 1D mechanism and the weights (Policy's default).
/// Where the paper is silent: under the one-port model, while the port is busy with a
/// send, the oldest request of the local executor is served first (it needs no port).

#include "runtime/core/Policy.hpp"

namespace treefarm::core {

/// The FCFS choice among the requests whose requester `eligible(target)` accepts: the
/// oldest such request with the oldest buffered task it can take (when
/// state.any_task_for_any(), the first task). FcfsPolicy takes every requester; `lp`'s
/// fallback only the planned ones (LpPolicy.cpp).
template <class Eligible>
std::optional<Assignment> first_come_first_served(const NodeState& state, Eligible&& eligible) {
  if (state.buffer.empty()) return std::nullopt;
  // While the port is busy only the executor's requests can be served: without one, no
  // choice (a scan of thousands of children's requests per call otherwise).
  const bool local_only = state.children_blocked();
  if (local_only && state.local_requests == 0) return std::nullopt;
  for (std::size_t r = 0; r < state.requests.size(); ++r) {
    if (local_only && !state.requests[r].from.local) continue;
    if (!eligible(state.requests[r].from)) continue;
    if (state.any_task_for_any()) {
      if (state.can_serve(state.requests[r].from)) return Assignment{r, 0};
    } else if (auto t = first_task_for(state, r)) {
      return Assignment{r, *t};  // the oldest task that fits it (lee2010 slide 19)
    }
  }
  return std::nullopt;
}

class FcfsPolicy final : public Policy {
 public:
  std::optional<Assignment> select(const NodeState& state) override;
};

}  // namespace treefarm::core
