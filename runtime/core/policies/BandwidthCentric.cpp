#include "runtime/core/policies/BandwidthCentric.hpp"

#include <limits>

namespace treefarm::core {

double BandwidthCentric::priority(const NodeState& state, const Target& from) {
  if (from.local) return std::numeric_limits<double>::infinity();
  auto it = state.children.find(from.child);
  return it == state.children.end() ? -1.0 : it->second.bandwidth;
}

std::optional<std::size_t> BandwidthCentric::best_request(const NodeState& state, TaskRef task) {
  std::optional<std::size_t> best;
  double best_priority = 0;
  for (std::size_t r = 0; r < state.requests.size(); ++r) {
    const Target& from = state.requests[r].from;
    if (!state.can_assign(from, task)) continue;
    const double p = priority(state, from);
    if (!best || p > best_priority) {  // strict: ties keep the oldest (arrival order)
      best = r;
      best_priority = p;
    }
  }
  return best;
}

}  // namespace treefarm::core
