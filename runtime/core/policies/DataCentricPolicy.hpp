#pragma once
/// @file DataCentricPolicy.hpp
/// DATA-CENTRIC scheduling (papers/beaumont2006 §4.5) as a policy of the node scheduler,
/// decentralized: every quantity along a path is computed by propagation, one link at a
/// time, from constant-size (O(K)) messages. See docs/policies.md.
///
/// Up the tree, every worker sends its parent a Summary of its subtree (SubtreeSummary):
/// per application the tasks/s the subtree could compute alone (its bandwidth-centric
/// capacity: the node's own rate plus its children's summarized capacities, each bounded
/// by the residual share of the link/port to that child — so the minimum bandwidth along
/// a path below bounds it), the extra tasks/s it could still absorb on top of its current
/// rates (free CPU bounded by the minimum residual bandwidth on the way down), its current
/// rates (the CCR mix it computes), an efficiency factor and two flags (under-utilized,
/// cannot keep up with what it is asked).
///
/// Down the tree, every node sends each child one Rates message: tasks/s per application
/// for the child's whole subtree. A node turns the rates it gets into rates for its own
/// executor and for each child by running DataCentricPlanner on its local star — itself
/// plus one node per child whose per-application rates are that child's summarized
/// capacity — with the parent's rates as the weights, then cutting each application to
/// what the parent asked. So communication trading, gap filling and bus de-saturation of
/// its own port are decided at each node from its children's summaries alone. The root
/// runs the same planner with the weights w(k) (task trading on the root included) to the
/// 5% balance, and draws types in proportion to the planned α(k).
///
/// Rates are recomputed at most once per max(`report_interval`, twice the node's slowest
/// task or transfer time) (a Tick through
/// next_deadline()), and a message goes out only when it changed by more than 5%.
/// Before a node has rates, and whenever no planned choice is feasible, it schedules
/// bandwidth-centric (the executor, then the fastest link).
/// Needs: child bandwidths (ChildInfo.bandwidth or TransferObserved), local task seconds
/// (NodeConfig::local_seconds or LocalTaskFinished), b(k), c(k) (for the CCR order),
/// distinct names among the children of a node (ChildInfo::name).

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "runtime/core/policies/DataCentricPlanner.hpp"
#include "runtime/core/policies/IntervalGate.hpp"
#include "runtime/core/policies/RatePlanPolicy.hpp"

namespace treefarm::core {

/// What a node tells its parent of its subtree: O(K) numbers, whatever the subtree size.
/// All rates in tasks/s, one entry per application.
struct SubtreeSummary {
  /// Tasks/s of each application the subtree could compute alone (bandwidth-centric,
  /// propagated up: own rate + Σ children's capacity bounded by the free port share).
  std::vector<double> capacity;
  /// Extra tasks/s of each application on top of `load`: free CPU of the subtree bounded
  /// by the minimum residual bandwidth along the path to it (propagated up).
  std::vector<double> absorbable;
  /// Tasks/s of each application the subtree is currently set to compute (its CCR mix).
  std::vector<double> load;
  /// In (0, 1]: how much of `capacity` the subtree reaches along the mix it was asked for
  /// (a subtree is not a single CPU: mixing can cost). The parent plans with
  /// capacity × efficiency.
  double efficiency = 1;
  /// Free CPU reachable below (some absorbable > 5% of its capacity).
  bool under_utilized = false;
  /// It was asked for more than it can compute (< 95% of the asked mix is reachable).
  bool cannot_keep_up = false;

  bool operator==(const SubtreeSummary&) const = default;
};

class DataCentricPolicy final : public RatePlanPolicy {
 public:
  /// `report_interval`: seconds between two recomputations (and messages) of a node.
  explicit DataCentricPolicy(Seconds report_interval = 0.25);

  void observe(const NodeState& state, const Event& event) override;
  std::optional<std::string> check_message(const NodeState& state, const event::PolicyMessage& message) const override;
  void take_messages(const NodeState& state, std::vector<Action>& out) override;
  std::optional<Seconds> next_deadline(const NodeState& state) const override;

  /// This node's summary of its subtree as last computed (also at the root, not sent).
  const SubtreeSummary& summary() const { return summary_; }
  /// The last summary received from `child`, if any.
  const SubtreeSummary* child_summary(ChildId child) const;
  /// The last planner result on the local star (root: the fair-throughput plan).
  const std::optional<PlannerResult>& last_result() const { return result_; }
  /// The local star the last result was computed on: this node, then one node per child
  /// (rates = its summarized capacity × efficiency, bandwidth = the link to it).
  const std::vector<ViewNode>& view() const { return view_; }
  /// Non-root: tasks/s per application the parent last asked of this subtree.
  const std::optional<std::vector<double>>& demand() const { return demand_; }
  /// Tasks/s this node computes of each application alone (0: unknown yet).
  std::vector<double> own_rates(const NodeState& state) const;

  enum class Kind : std::uint8_t { summary = 1, rates = 2 };
  /// The payload of a Summary (child to parent): kind, K, then capacity, absorbable and
  /// load (K doubles each), efficiency, flags — 14 + 24·K bytes.
  static std::vector<std::uint8_t> encode_summary(const SubtreeSummary& s);
  /// The payload of a Rates message (parent to child): kind, K, K doubles — 5 + 8·K bytes.
  static std::vector<std::uint8_t> encode_rates(const std::vector<double>& rates);

 private:
  /// No rates yet, or no planned choice feasible: bandwidth-centric (§4.5 starts from it).
  std::optional<Assignment> unplanned_select(const NodeState& state) override;
  void recompute(const NodeState& state);
  void adopt(const NodeState& state, NodePlan plan);

  Seconds interval_;
  Seconds effective_interval(const NodeState& state) const;
  std::uint32_t cores_ = 0;            ///< Executor slots seen (requests + running).
  /// What this node knows of a child: its last summary, the rates last sent to it.
  struct ChildReport {
    std::optional<SubtreeSummary> summary;
    std::optional<std::vector<double>> rates_sent;  ///< tasks/s per application
  };
  std::map<ChildId, ChildReport> children_;
  std::optional<std::vector<double>> demand_;
  SubtreeSummary summary_;
  std::optional<SubtreeSummary> summary_sent_;
  std::vector<ViewNode> view_;
  std::optional<PlannerResult> result_;
  IntervalGate gate_;  ///< recompute() at most once per effective_interval()
  std::vector<Action> outbox_;
};

}  // namespace treefarm::core
