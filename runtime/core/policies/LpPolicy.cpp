#include "runtime/core/policies/LpPolicy.hpp"

#include "runtime/core/policies/FcfsPolicy.hpp"

#include <algorithm>
#include <string>

namespace treefarm::core {

void LpPolicy::start(const NodeState& state) {
  Policy::start(state);
  follower_.set_plan(state.config.plan);
  fallbacks_ = 0;
  plan_mix_ = LoadBalancer1D(follower_.totals(state.config.apps.size()));
}

// §4.1: the root draws types in proportion to the plan's α(k): what it computes itself
// plus what the LP sends into each of its children. Only the children that are there
// count (a plan may also list deeper nodes, whose tasks already pass through them).
void LpPolicy::refresh_mix(const NodeState& state) {
  if (mix_children_ && same_children(state.children, *mix_children_)) return;
  mix_children_ = child_ids(state.children);
  const std::size_t apps = state.config.apps.size();
  std::vector<double> t(apps, 0.0);
  if (const auto& plan = state.config.plan) {
    for (std::size_t a = 0; a < apps && a < plan->local.size(); ++a) t[a] += std::max(0.0, plan->local[a]);
    for (const auto& [id, c] : state.children)
      if (const auto it = plan->children.find(c.info.name); it != plan->children.end())
        for (std::size_t a = 0; a < apps && a < it->second.size(); ++a) t[a] += std::max(0.0, it->second[a]);
  }
  plan_mix_.set_frequencies(std::move(t));
}

// §4.1: 1D load balancing over (requester, type); FCFS when no planned choice is feasible.
std::optional<Assignment> LpPolicy::unplanned_select(const NodeState& state) {
  auto a = FcfsPolicy{}.select(state);
  if (a) ++fallbacks_;
  return a;
}

}  // namespace treefarm::core
