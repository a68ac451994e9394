#include "runtime/core/policies/FcfsPolicy.hpp"

namespace treefarm::core {

std::optional<Assignment> FcfsPolicy::select(const NodeState& state) {
  if (state.buffer.empty()) return std::nullopt;
  for (std::size_t r = 0; r < state.requests.size(); ++r) {
    if (state.any_task_for_any()) {
      if (state.can_serve(state.requests[r].from)) return Assignment{r, 0};
    } else if (auto t = first_task_for(state, r)) {
      return Assignment{r, *t};  // the oldest task that fits it (lee2010 slide 19)
    }
  }
  return std::nullopt;
}

}  // namespace treefarm::core
