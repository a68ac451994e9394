#pragma once
/// @file CgbcPolicy.hpp
/// Coarse-Grain Bandwidth-Centric (papers/beaumont2006 §4.3). A macro-task holds m(k)
/// tasks of each type k, m(k) = max(1, round(w(k) / min_j w(j))) (the weights scaled so the
/// smallest is 1, then rounded). Macro-tasks are scheduled bandwidth-centric: a node gives
/// work to its highest-priority requester (BandwidthCentric: the executor first, then the
/// children by link bandwidth).
///
/// Where the paper is silent / our mapping: requests and buffers are counted in tasks
/// (B may be smaller than a macro-task), so the macro-task is the unit of the *mix*, not of
/// a transfer: the root draws macro-task after macro-task — each exactly m(k) tasks of type
/// k, interleaved by the 1D rule — and every node forwards the tasks in that order, each to
/// the highest-priority requester. When an application's bag is empty, the remaining
/// macro-tasks are made of the others.
/// Needs: child bandwidths (ChildInfo.bandwidth or TransferObserved), nothing else.

#include <vector>

#include "runtime/core/Policy.hpp"

namespace treefarm::core {

class CgbcPolicy final : public Policy {
 public:
  void start(const NodeState& state) override;
  std::optional<AppId> next_source_app(const NodeState& state) override;
  std::optional<Assignment> select(const NodeState& state) override;

  /// m(k): tasks of application k per macro-task.
  const std::vector<std::uint32_t>& macro_task() const { return macro_; }
  /// m(k) from the weights (the rounding documented above).
  static std::vector<std::uint32_t> macro_task_of(const std::vector<AppParams>& apps);

 private:
  std::vector<std::uint32_t> macro_;
  std::vector<std::uint32_t> used_;  ///< Tasks of the current macro-task drawn, per app.
};

}  // namespace treefarm::core
