#pragma once
/// @file PlanFollower.hpp
/// Follows steady-state rates with the 1D load-balancing mechanism (papers/beaumont2006
/// §4.1): the choices are the pairs (requester, application) — the executor and each
/// child, named in the plan by ChildInfo::name — with frequencies the plan's tasks/s.
/// Shared by "lp" (rates from the LP, NodeConfig::plan) and "data-centric" (rates from
/// its trading, §4.5).
///
/// A choice is feasible when its requester has a pending request that can take the oldest
/// buffered task of its application now. select() makes the feasible choice the 1D rule
/// prefers; a choice that could not be made keeps its deficit and catches up as soon as it
/// is feasible again. The counts restart whenever the plan or the set of children changes.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/LoadBalancer1D.hpp"
#include "runtime/core/NodeState.hpp"

namespace treefarm::core {

class PlanFollower {
 public:
  struct Choice {
    Target to;
    AppId app;
  };

  /// Replaces the plan (nullopt: none; select() then never chooses).
  void set_plan(std::optional<NodePlan> plan);
  /// After a re-plan (docs/live-model.md): a child holding held_share() tasks or more is
  /// not a feasible choice (demand-driven requests would otherwise refill a slowed
  /// child's buffer whenever the faster ones are full). Empty: no caps.
  void set_caps(std::map<std::string, std::uint64_t> caps) { caps_ = std::move(caps); }
  /// Whether child `c` is below its cap (true without one).
  bool below_cap(const ChildState& c) const {
    const auto it = caps_.find(c.info.name);
    return it == caps_.end() || c.in_flight < it->second;
  }
  bool has_plan() const { return plan_.has_value(); }
  const std::optional<NodePlan>& plan() const { return plan_; }

  /// The preferred feasible planned choice as an Assignment (oldest request of that
  /// requester, oldest task of that application), or nullopt if none is feasible.
  std::optional<Assignment> select(const NodeState& state);
  /// What the root should draw from its bag (papers/beaumont2006 §4: the master holds
  /// every task, so it can hand each requester what the plan gives it next instead of
  /// keeping a stock in the ratio of the plan, which clogs the buffer with tasks the
  /// requesters of the moment were not planned to get when a resource is saturated).
  struct Draw {
    bool planned = false;        ///< some planned choice can be made, from the buffer or the bag
    std::optional<AppId> app;    ///< its application, when no task of it is buffered
  };
  /// The choice select() would make if every application with tasks left in the bag had
  /// one buffered.
  Draw next_draw(const NodeState& state);
  /// Records that `to` got a task of `task.app()` (whatever chose it).
  void assigned(const NodeState& state, const Target& to, TaskRef task);

  /// Σ of the plan's rates per application (local + every child): at the root, α(k).
  std::vector<double> totals(std::size_t apps) const;

  /// The current choices and their balancer (for tests), after sync with `state`.
  const std::vector<Choice>& choices(const NodeState& state);
  const LoadBalancer1D& balancer() const { return balancer_; }

 private:
  void sync(const NodeState& state);

  std::optional<NodePlan> plan_;
  std::map<std::string, std::uint64_t> caps_;
  bool dirty_ = true;
  std::vector<ChildId> children_seen_;
  std::vector<Choice> choices_;
  LoadBalancer1D balancer_;
};

/// The plan with every rate below 1e-4 of its application's total (local + every listed
/// node) set to 0. The LP is solved to a tolerance, and its second stage (lp::solve,
/// spreading the load among the optima) may leave crumbs of ~1e-6 of the optimum on nodes
/// the optimum does not use; a crumb would make its requester a planned choice, served
/// whenever no other is feasible (on the quickstart a node two hops down took
/// 30 % of the tasks so).
NodePlan without_crumbs(NodePlan plan);

/// Σ of `rates` (tasks/s per application), negative rates counted as 0: what a plan
/// gives one requester in all.
double planned_total(const std::vector<double>& rates);

/// Tasks a child named `child` with `cores` cores should hold under `plan` with buffers of
/// `buffer` tasks (docs/live-model.md): its share of the buffer in proportion to its rate
/// against the largest rate of any requester, ⌈B · rate / max rate⌉, plus its cores.
/// nullopt when the plan does not name it or gives no rate at all.
std::optional<std::uint64_t> held_share(const NodePlan& plan, std::uint32_t buffer, const std::string& child,
                                        std::uint32_t cores);

/// Whether two rates differ by at most `tolerance` of the larger (plus 1e-12 tasks/s):
/// policies that recompute a plan keep the old one, and its 1D counts, when so.
bool rates_close(double a, double b, double tolerance);
/// rates_close for every element; vectors of different sizes are not close.
bool rates_close(const std::vector<double>& a, const std::vector<double>& b, double tolerance);
/// rates_close for the local rates and every child's (the same children on both sides).
bool plans_close(const NodePlan& a, const NodePlan& b, double tolerance);

}  // namespace treefarm::core
