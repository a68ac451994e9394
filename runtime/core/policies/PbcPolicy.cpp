#include "runtime/core/policies/PbcPolicy.hpp"

#include "runtime/core/policies/BandwidthCentric.hpp"

namespace treefarm::core {

// §4.4: K bandwidth-centric schedulers, taking turns.
std::optional<Assignment> PbcPolicy::select(const NodeState& state) {
  const auto k = static_cast<std::uint32_t>(state.config.apps.size());
  for (std::uint32_t i = 0; i < k; ++i) {
    const std::uint32_t app = (turn_ + i) % k;
    for (std::size_t t = 0; t < state.buffer.size(); ++t) {
      if (state.buffer[t].app().value != app) continue;
      if (auto r = BandwidthCentric::best_request(state, state.buffer[t])) return Assignment{*r, t};
      break;  // this scheduler's oldest task cannot go anywhere now
    }
  }
  return std::nullopt;
}

void PbcPolicy::assigned(const NodeState& state, const Target&, TaskRef task) {
  const auto k = static_cast<std::uint32_t>(state.config.apps.size());
  turn_ = (task.app().value + 1) % k;
}

}  // namespace treefarm::core
