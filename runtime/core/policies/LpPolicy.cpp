#include "runtime/core/policies/LpPolicy.hpp"

#include "runtime/core/policies/FcfsPolicy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace treefarm::core {

void LpPolicy::start(const NodeState& state) {
  Policy::start(state);
  follower_.set_plan(state.config.plan ? std::optional<NodePlan>(without_crumbs(*state.config.plan)) : std::nullopt);
  fallbacks_ = 0;
  plan_mix_ = LoadBalancer1D(follower_.totals(state.config.apps.size()));
  root_stock_ = stock_for_plan(state);  // a figure of the plan: computed once, not per pump
}

// A re-plan (docs/live-model.md): the LP solved again from the run's own estimates
// (beaumont2006 §4.1's rates, recomputed as §4.5 recomputes its own "to cope with
// potential availability variations"). The follower restarts its counts on the new rates;
// the mix and the stock follow them; what is buffered or in flight stays where it is.
void LpPolicy::replan(const NodeState& state, NodePlan plan) {
  std::map<std::string, std::uint64_t> caps;
  for (const auto& [id, c] : state.children)
    if (const auto keep = held_share(plan, state.config.buffer, c.info.name, c.info.cores)) caps[c.info.name] = *keep;
  follower_.set_caps(std::move(caps));
  follower_.set_plan(without_crumbs(std::move(plan)));
  plan_mix_ = LoadBalancer1D(follower_.totals(state.config.apps.size()));
  mix_children_.reset();
  root_stock_ = stock_for_plan(state);
}

// §4.1: the root draws types in proportion to the plan's α(k): what it computes itself
// plus what the LP sends into each of its children. Only the children that are there
// count (a plan may also list deeper nodes, whose tasks already pass through them).
void LpPolicy::refresh_mix(const NodeState& state) {
  if (mix_children_ && same_children(state.children, *mix_children_)) return;
  mix_children_ = child_ids(state.children);
  const std::size_t apps = state.config.apps.size();
  std::vector<double> t(apps, 0.0);
  if (const auto& plan = follower_.plan()) {
    for (std::size_t a = 0; a < apps && a < plan->local.size(); ++a) t[a] += std::max(0.0, plan->local[a]);
    for (const auto& [id, c] : state.children)
      if (const auto it = plan->children.find(c.info.name); it != plan->children.end())
        for (std::size_t a = 0; a < apps && a < it->second.size(); ++a) t[a] += std::max(0.0, it->second[a]);
  }
  plan_mix_.set_frequencies(std::move(t));
}

std::size_t LpPolicy::root_stock(const NodeState& state) const { return std::max<std::size_t>(state.config.buffer, root_stock_); }

std::size_t LpPolicy::stock_for_plan(const NodeState& state) const {
  const std::vector<double> t = follower_.totals(state.config.apps.size());
  double sum = 0, rarest = 0;
  for (std::size_t a = 0; a < t.size(); ++a) {
    if (!(t[a] > 0)) continue;
    sum += t[a];
    rarest = rarest > 0 ? std::min(rarest, t[a]) : t[a];
  }
  if (!(rarest > 0)) return state.config.buffer;
  return std::max<std::size_t>(state.config.buffer, static_cast<std::size_t>(std::min(1000.0, std::ceil(sum / rarest))));
}

bool LpPolicy::planned(const NodeState& state, const Target& to) const {
  const auto& plan = follower_.plan();
  if (!plan) return true;
  if (to.local) return planned_total(plan->local) > 0.0;
  const auto c = state.children.find(to.child);
  if (c == state.children.end()) return true;
  const auto it = plan->children.find(c->second.info.name);
  return it == plan->children.end() || planned_total(it->second) > 0.0;  // missing from the plan: FCFS
}

// §4.1: 1D load balancing over (requester, type); FCFS when no planned choice is feasible.
// A requester the plan gives nothing (a zero rate for every application) is left idle
// while a requester with a planned rate is connected: the paper's LP-based node follows
// the rates only, and the LP leaves a node idle when feeding it would spend a resource
// the plan saturates (on one host, a node two hops down costs the host's CPU a second
// transfer per task; docs/policies.md `lp`). With no planned requester left
// (they died or left), every requester is served, so the bag still drains.
std::optional<Assignment> LpPolicy::unplanned_select(const NodeState& state) {
  bool any_planned = false;
  if (follower_.has_plan()) {
    any_planned = state.config.cores > 0 && planned(state, Target::executor());
    for (const auto& [id, c] : state.children) any_planned = any_planned || planned(state, Target::to_child(id));
  }
  auto a = first_come_first_served(state, [&](const Target& t) {
    if (!t.local)  // after a re-plan, a child at its cap waits (docs/live-model.md)
      if (const auto c = state.children.find(t.child); c != state.children.end() && !follower_.below_cap(c->second))
        return false;
    return !any_planned || planned(state, t);
  });
  // Without a plan (a run waiting for its first one, docs/live-model.md) FCFS is the
  // rule (§4.2), not a choice outside it.
  if (a && follower_.has_plan()) ++fallbacks_;
  return a;
}

}  // namespace treefarm::core
