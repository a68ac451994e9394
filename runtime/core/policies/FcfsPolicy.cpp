#include "runtime/core/policies/FcfsPolicy.hpp"

namespace treefarm::core {

std::optional<Assignment> FcfsPolicy::select(const NodeState& state) {
  return first_come_first_served(state, [](const Target&) { return true; });
}

}  // namespace treefarm::core
