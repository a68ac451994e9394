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

std::optional<Assignment> BandwidthCentric::oldest_task_best_request(const NodeState& state) {
  // Without requirements every request can take the oldest task; with them, the oldest
  // task that some request can take (papers/lee2010 slide 19).
  const std::size_t tasks = state.any_task_for_any() ? std::min<std::size_t>(1, state.buffer.size()) : state.buffer.size();
  for (std::size_t t = 0; t < tasks; ++t)
    if (auto r = best_request(state, state.buffer[t])) return Assignment{*r, t};
  return std::nullopt;
}

}  // namespace treefarm::core
