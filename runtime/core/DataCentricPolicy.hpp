#pragma once
/// @file DataCentricPolicy.hpp
/// DATA-CENTRIC scheduling (papers/beaumont2006 §4.5) as a policy of the node scheduler.
///
/// What runs where (the "view assembled from reports" variant, see docs/policies.md):
///  - every worker reports its subtree to its parent in an action::SendPolicyMessage
///    (kind Report): one record per node of the subtree — name, parent, bandwidth of the
///    link into it (bytes/s, measured by that link's sender), and the tasks/s it computes
///    of each application alone (executor slots / mean task seconds, §5.1.4). A node sends
///    a report when its summary changed by more than 5% and at most once per
///    report_interval seconds (a Tick through next_deadline() sends a delayed one);
///  - the root assembles the reports into a view of the tree and runs DataCentricPlanner
///    (bandwidth-centric start for the highest-CCR application, then communication
///    trading, gap filling, bus de-saturation, task trading on the root, to the 5%
///    balance); whenever the view changed by more than 5% it recomputes and sends each
///    child the rates of the nodes of its subtree (kind Plan), which every node forwards
///    down, keeping its own entry;
///  - every node follows its rates with the 1D mechanism (PlanFollower), like "lp"; the
///    root draws types in proportion to the planned α(k).
/// Before a node has rates (start-up), and whenever no planned choice is feasible, it
/// schedules bandwidth-centric (the executor, then the fastest link), which is also how
/// the first task durations get measured; the root then draws by weight.
/// Needs: child bandwidths (ChildInfo.bandwidth or TransferObserved), local task seconds
/// (NodeConfig::local_seconds or LocalTaskFinished), b(k), c(k) (for the CCR order),
/// unique node names (NodeConfig::name, ChildInfo::name).

#include <map>
#include <optional>
#include <vector>

#include "runtime/core/DataCentricPlanner.hpp"
#include "runtime/core/PlanFollower.hpp"
#include "runtime/core/Policy.hpp"

namespace treefarm::core {

class DataCentricPolicy final : public Policy {
 public:
  /// `report_interval`: seconds between two reports (or recomputations at the root).
  explicit DataCentricPolicy(Seconds report_interval = 0.25);

  std::string_view name() const override { return "data-centric"; }
  void start(const NodeState& state) override;
  std::optional<AppId> next_source_app(const NodeState& state) override;
  std::optional<Assignment> select(const NodeState& state) override;
  void observe(const NodeState& state, const Event& event) override;
  void assigned(const NodeState& state, const Target& to, TaskRef task) override;
  std::optional<std::string> check_message(const NodeState& state, const event::PolicyMessage& message) const override;
  void take_messages(const NodeState& state, std::vector<Action>& out) override;
  std::optional<Seconds> next_deadline(const NodeState& state) const override;

  /// This node's summary of its subtree as last built (itself first).
  std::vector<ViewNode> summary(const NodeState& state) const;
  /// Root: the last planner result (nullopt before the first view).
  const std::optional<PlannerResult>& last_result() const { return result_; }
  /// Root: the view the last result was computed on.
  const std::vector<ViewNode>& view() const { return sent_summary_; }
  const PlanFollower& follower() const { return follower_; }
  /// Tasks/s this node computes of each application alone (0: unknown yet).
  std::vector<double> own_rates(const NodeState& state) const;

  enum class Kind : std::uint8_t { report = 1, plan = 2 };

 private:
  void publish(const NodeState& state);
  void adopt(const NodeState& state, NodePlan plan);
  void send_plans(const NodeState& state, const std::vector<ViewNode>& view, const std::vector<NodePlan>& plans);

  Seconds interval_;
  PlanFollower follower_;
  LoadBalancer1D plan_mix_;
  std::uint32_t cores_ = 0;            ///< Executor slots seen (requests + running).
  std::uint32_t local_running_ = 0;
  std::map<ChildId, std::vector<ViewNode>> reports_;
  std::vector<ViewNode> sent_summary_;
  bool published_ = false;
  Seconds last_check_ = 0;
  bool checked_ = false;
  bool waiting_ = false;
  std::optional<PlannerResult> result_;
  std::vector<Action> outbox_;
};

}  // namespace treefarm::core
