#include "runtime/core/LpPolicy.hpp"

#include "runtime/core/FcfsPolicy.hpp"

namespace treefarm::core {

void LpPolicy::start(const NodeState& state) {
  Policy::start(state);
  follower_.set_plan(state.config.plan);
  plan_mix_ = LoadBalancer1D(follower_.totals(state.config.apps.size()));
}

// §4.1: the root draws types in proportion to the plan's α(k).
std::optional<AppId> LpPolicy::next_source_app(const NodeState& state) {
  auto k = plan_mix_.next([&](std::size_t i) {
    return state.source_remaining(AppId{static_cast<std::uint32_t>(i)}) > 0;
  });
  if (k) return AppId{static_cast<std::uint32_t>(*k)};
  return Policy::next_source_app(state);
}

// §4.1: 1D load balancing over (requester, type); FCFS when no planned choice is feasible.
std::optional<Assignment> LpPolicy::select(const NodeState& state) {
  if (auto a = follower_.select(state)) return a;
  return FcfsPolicy{}.select(state);
}

void LpPolicy::assigned(const NodeState& state, const Target& to, TaskRef task) {
  follower_.assigned(state, to, task);
}

}  // namespace treefarm::core
