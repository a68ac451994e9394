#pragma once
/// @file LpPolicy.hpp
/// Centralized LP-based (papers/beaumont2006 §4.1): each node follows the rates of the LP
/// solution (NodeConfig::plan: tasks/s per application computed locally and sent to each
/// child, by child name) with the 1D load-balancing mechanism over the choices (requester,
/// application) — PlanFollower. The root draws types in proportion to the plan's total
/// α(k) = local + Σ sent (1D rule).
///
/// Where the paper is silent: it waits when the chosen (requester, type) has no match
/// (Figure 1, line 9). With finite bags and bounded buffers that can deadlock (a buffer
/// full of a type the plan gives to nobody who asks), so this node is work-conserving:
/// it makes the feasible choice the 1D rule prefers, and when no planned choice is
/// feasible it serves the oldest request with the oldest task (FCFS), a choice that is
/// counted too — among the requesters the plan gives some rate: one it gives nothing
/// stays idle while a planned requester is connected (see LpPolicy.cpp). At the root, once the planned applications' bags are empty, the others
/// are drawn by weight.
/// Without a plan (or a node missing from it): FCFS (§4.2), weights at the root; without
/// a plan those choices are not counted as fallbacks.
/// Needs: the plan (computed off-line from calibrated b_u, c_u); child names.

#include <cstdint>

#include "runtime/core/policies/RatePlanPolicy.hpp"

namespace treefarm::core {

class LpPolicy final : public RatePlanPolicy {
 public:
  void start(const NodeState& state) override;

  /// Choices made by the FCFS fallback because no planned choice was feasible, since
  /// start (every fallback is counted; the adapters are to report it).
  std::uint64_t fallbacks() const override { return fallbacks_; }
  /// The plan comes from the LP over a calibrated platform.
  bool needs_calibration() const override { return true; }
  /// It follows the node's plan and every re-plan.
  bool follows_plan() const override { return true; }
  /// Switches to the new rates in place (docs/live-model.md).
  void replan(const NodeState& state, NodePlan plan) override;
  /// Root: B, or enough that the stock, drawn in the plan's mix, holds about one task of
  /// its rarest planned application: ⌈Σα / min α⌉ over the plan's α(k) > 0, at most
  /// 1,000 — a figure of the plan, fixed for the run (lan-slices: with B = 4
  /// and ten matadd to one matmul the stock rarely held the matmul the narrow link's node
  /// is planned on, and lp fell back to giving it matadd).
  std::size_t root_stock(const NodeState& state) const override;

  PlanFollower& follower() { return follower_; }
  using RatePlanPolicy::follower;

 private:
  /// §4.1: the root draws types in proportion to the plan's α(k) (see LpPolicy.cpp).
  void refresh_mix(const NodeState& state) override;
  /// FCFS among the planned requesters, counted as a fallback.
  std::optional<Assignment> unplanned_select(const NodeState& state) override;
  /// Whether the plan gives `to` a positive rate for some application (true without a
  /// plan, or for a child the plan does not name).
  bool planned(const NodeState& state, const Target& to) const;
  /// root_stock's figure for the plan set at start().
  std::size_t stock_for_plan(const NodeState& state) const;

  std::optional<std::vector<ChildId>> mix_children_;  ///< Children the mix was computed for.
  std::size_t root_stock_ = 0;                        ///< stock_for_plan() at start()
  std::uint64_t fallbacks_ = 0;                       ///< FCFS choices (no planned one feasible).
};

}  // namespace treefarm::core
