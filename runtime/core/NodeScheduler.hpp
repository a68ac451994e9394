#pragma once
/// @file NodeScheduler.hpp
/// The node scheduler: the demand-driven scheduler thread of papers/beaumont2006 §4,
/// Figure 1, as a pure state machine. Everything that changes a node's scheduling state
/// lives in this class: events in, actions out, time passed in. No sockets, threads or
/// clocks: the ZeroMQ adapter, the SimGrid adapter and the tests drive it alike.
///
/// Invariants (checked by the tests):
///  - buffer().size() + requested_from_parent <= B, except transiently after a child
///    left and its tasks were re-queued;
///  - a request is sent to the parent as soon as there is room for a task after every
///    outstanding request is served (Figure 1, line 2), from the first request of the
///    executor or a child on (a subtree without cores never asks, so never hoards tasks);
///    with B >= 16, once there is room for B/8 tasks or the buffer is empty (fewer
///    messages: requests in batches);
///  - every task assigned to the executor or a child is remembered until its result
///    comes back, and re-queued if that child leaves;
///  - task deadlines (NodeConfig::deadline_factor > 0): a task a child holds past its
///    deadline is re-issued to another consumer (never back to a holder); the holder keeps
///    a "late copy" whose result is still accepted if it comes first; whichever result
///    comes second is dropped as a duplicate and its sender is not blamed. Each node
///    forwards at most one result per task it received.

#include <cstdint>
#include <array>
#include <deque>
#include <memory>
#include <memory_resource>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/core/DeadlineQueue.hpp"
#include "runtime/core/Events.hpp"
#include "runtime/core/LinkFit.hpp"
#include "runtime/core/NodeState.hpp"
#include "runtime/core/Policy.hpp"

namespace treefarm::core {

/// An event that the state machine does not accept in its current state. Adapters drop
/// the peer that caused it.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class NodeScheduler {
 public:
  /// Throws std::invalid_argument for a bad configuration (no apps, zero weight, B = 0).
  NodeScheduler(NodeConfig config, std::unique_ptr<Policy> policy);

  /// Applies one event at time `now` (seconds, non-decreasing) and returns the actions
  /// to carry out, in order. Throws ProtocolError for an event the state does not admit
  /// (the message names the event, the role and the state); the state is unchanged then.
  std::vector<Action> handle(const Event& event, Seconds now);
  /// The same, appending the actions to `out` (an adapter reusing one vector: no
  /// allocation per event). On a throw `out` holds what it held before.
  void handle_into(const Event& event, Seconds now, std::vector<Action>& out);

  /// Actions due without any event: the root's first draws (a worker's first request to
  /// its parent follows the first WorkRequested it gets). Call once after construction
  /// (and it is harmless to call again).
  std::vector<Action> start(Seconds now);

  /// When the core wants a Tick (policies that recompute periodically, e.g. the reports
  /// of "data-centric"); nullopt: never. A Tick delivered early or late is harmless.
  /// Also when the earliest task deadline expires (NodeConfig::deadline_factor).
  std::optional<Seconds> next_deadline() const;

  const NodeState& state() const { return state_; }
  const Policy& policy() const { return *policy_; }
  /// Task migration's state and counters (NodeConfig::migration).
  const Migration& migration() const { return migration_; }

  /// Root: tasks recorded done, duplicates dropped, total to do.
  std::uint64_t completed() const { return completed_count_; }
  std::uint64_t duplicates() const { return duplicate_count_; }
  std::uint64_t total_tasks() const { return total_tasks_; }
  bool run_complete() const { return total_tasks_ > 0 && completed_count_ == total_tasks_; }

  /// Tasks assigned (to the executor or a child) and not yet reported done.
  std::size_t in_flight() const { return in_flight_.size(); }

  /// Task deadlines: tasks re-issued after a deadline so far, results of late copies
  /// dropped as duplicates, tasks waiting for a consumer that does not hold them.
  std::uint64_t reissued() const { return reissued_count_; }
  std::uint64_t late_duplicates() const { return late_duplicate_count_; }
  std::size_t reissue_pending() const { return reissue_.size(); }
  /// The deadline of a task a child holds (seconds on the caller's clock), if armed.
  std::optional<Seconds> deadline_of(TaskId task) const;

 private:
  /// Requests (tasks asked for and not yet served) a node keeps at most: more is a protocol error.
  static constexpr std::uint64_t max_pending_requests = std::uint64_t{1} << 20;
  /// Where a task assigned here went, and (a child's, task deadlines armed) when it was
  /// sent and its deadline; deadline < 0: none armed. One entry per task (the
  /// deadline had a hash map of its own).
  struct Holding {
    Target to;
    Seconds sent = 0;
    Seconds deadline = -1;
  };
  void apply(const Event& event, std::vector<Action>& out);
  void pump(std::vector<Action>& out);
  void task_done(TaskRef task, std::vector<Action>& out);
  void skip_done_before(std::size_t k);
  void check_task(TaskRef task, const char* what) const;
  void assign(std::size_t request, TaskRef task, std::vector<Action>& out);
  void arm_deadline(ChildId child, TaskRef task, Holding& holding);
  bool deadline_live(const DeadlineQueue::Entry& entry) const;
  void drop_stale_deadlines();
  void expire_deadlines(std::vector<Action>& out);
  void serve_reissues(std::vector<Action>& out);
  bool holds_late_copy(TaskId task, const Target& t) const;
  void late_copy_done(TaskRef task, const Target& from, std::vector<Action>& out);
  [[noreturn]] void reject(const Event& event, const std::string& why) const;
  void pull_requested(const event::PullRequested& e, std::vector<Action>& out);
  void tasks_returned(const Event& event, const event::TasksReturned& e);
  /// After a re-plan: waiting tasks beyond what a child's new rate needs are taken back.
  void reclaim_after_replan(std::vector<Action>& out);
  /// At the end of the bag: waiting tasks that would finish sooner at an idle requester
  /// are taken back from a slower child (NodeSchedulerMigration.cpp).
  void reclaim_at_end_of_bag(std::vector<Action>& out);
  void tasks_pushed(const Event& event, const event::TasksPushed& e);
  void push_answered(const Event& event, const event::PushAnswered& e, std::vector<Action>& out);
  /// A returned or pushed task `t` that `child` (state `holder`) held, found at `held` in
  /// in_flight_, comes back here with its backfilling counter `bc` (NodeSchedulerMigration.cpp).
  void take_back(std::pmr::unordered_map<TaskId, Holding>::iterator held, ChildState& holder, ChildId child, TaskRef t,
                 std::uint32_t bc);
  /// A task `holder` held is no longer there: its demand leaves the holder's.
  void release(const Target& holder, TaskRef task);
  /// Recomputes state_.constrained from local_fits and the children's reports.
  void refresh_constrained();
  /// What this node's subtree can run and has (action::ReportCapacity).
  SubtreeCapacity subtree_capacity() const;
  void draw(AppId k, const char* why);
  bool draw_for_unserved();

  NodeState state_;
  std::unique_ptr<Policy> policy_;
  Migration migration_;
  std::optional<NodePlan> plan_;  ///< the last re-plan's rates (event::PlanChanged)
  /// Requirements or balancing in this run: this node reports its subtree's capacity.
  bool reports_capacity_ = false;
  std::optional<SubtreeCapacity> reported_;   ///< What it told its parent last.
  bool capacity_changed_ = true;              ///< A child joined, left or reported since.
  /// Per child: its transfers' fit (seconds = latency + bytes / bandwidth) and whether its
  /// bandwidth has heard from a transfer the fit measured (TransferObserved).
  struct LinkLearning {
    LinkFit fit;
    bool fitted = false;
  };
  std::unordered_map<ChildId, LinkLearning> links_;
  /// The nodes of the per-task tables (in_flight_, buffered_ids_) come from a pool of
  /// their own (no allocation per task): a node freed by an erasure is reused by
  /// the next insertion, so the steady state allocates nothing. Standard library only (the
  /// core links no third-party library). Declared before the tables: it outlives them.
  std::pmr::unsynchronized_pool_resource task_nodes_;
  std::pmr::unordered_map<TaskId, Holding> in_flight_{&task_nodes_};
  std::unordered_map<TaskId, std::uint32_t> losses_;  ///< Times a task was lost with a dead child.
  std::uint64_t next_seq_ = 0;
  // Task deadlines.
  /// Armed deadlines (in_flight_), earliest first, with stale entries (see
  /// drop_stale_deadlines).
  DeadlineQueue deadlines_;
  std::unordered_map<TaskId, std::uint32_t> reissues_;  ///< times each task was re-issued
  std::deque<TaskRef> reissue_;                         ///< re-issued, waiting for a consumer
  /// Ids of the tasks in state_.buffer, kept at every insertion and removal in
  /// NodeScheduler.cpp (the duplicate check of TaskArrived scanned the whole
  /// buffer, B entries, per task). A hit is confirmed against the buffer itself, so an id
  /// left here by mistake costs a scan, never a wrong rejection.
  std::pmr::unordered_set<TaskId> buffered_ids_{&task_nodes_};
  std::uint64_t reissued_count_ = 0;
  std::uint64_t late_duplicate_count_ = 0;
  // Root bookkeeping: exactly-once recording of results.
  std::vector<std::vector<bool>> done_;
  std::uint64_t completed_count_ = 0;
  std::uint64_t duplicate_count_ = 0;
  std::uint64_t total_tasks_ = 0;
  bool complete_announced_ = false;
  /// Root: where the latest results came from (a ring): a task reopened after a failed
  /// attempt (TasksReopened, right after its result) is retried elsewhere (failed_in).
  /// Allocated at the root's first result: every other node of a 100,000-node simulated
  /// tree would carry 4 KiB of it for nothing.
  static constexpr std::size_t recent_capacity = 256;
  std::vector<std::pair<TaskId, Target>> recent_results_;
  std::size_t recent_next_ = 0;
  std::size_t recent_count_ = 0;
  void note_result(TaskId id, const Target& from);
  /// The target the latest result of `id` came from, if still in the ring.
  std::optional<Target> result_from(TaskId id) const;
};

}  // namespace treefarm::core
