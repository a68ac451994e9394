#pragma once
/// @file Migration.hpp
/// Migration of waiting tasks between neighbouring nodes (papers/lee2010, slides 13, 15
/// and 16; docs/migration.md). Pure bookkeeping, owned by the NodeScheduler:
///  - the backfilling counter BC of each waiting task of the node's buffer: how many tasks
///    that arrived after it were assigned before it (slide 13);
///  - the node backfilling counter NBC = max BC over the buffer (slide 15); a task may go
///    to a target only if its BC >= the target's NBC, so migration starves no one;
///  - PULL (slide 16): an idle node (requests waiting, nothing buffered) asks the child
///    with the longest estimated queue for tasks that can start now; that child answers
///    with tasks from the back of its buffer or a reject, and the parent tries the next.
///    Siblings reach each other through their parent: the parent pulls from one child on
///    behalf of another's request.
///  - ownership moves with the task: the parent's record of the task held by the child
///    goes back to the parent's buffer (the parent still has the task's input), so the
///    result's way up and the root's exactly-once recording are unchanged;
///  - PUSH (slide 16): a parent tells each child its residual capacity (requests below it
///    that its buffer cannot serve, the shortest queue among those requesters, its NBC:
///    PushStatus); a child whose waiting queue is longer by 2 or more sends it waiting
///    tasks from the back of its buffer, and the parent takes what still fits (its idle
///    requesters other than that child) and refuses the rest, which stay with the child.
///    In the tree the neighbours a task can be pushed to are reached through the parent
///    (siblings, the parent's executor); a push down to a child is the ordinary dispatch.
///  - no loops: a node gives back each task at most once (visited-once rule, PULL and PUSH
///    alike), so a task migrates at most once per node of the tree.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/core/Events.hpp"

namespace treefarm::core {

struct NodeState;

/// Which migration scheme a node runs.
enum class MigrationMode {
  off,   ///< tasks stay where they were sent (beaumont2006's demand-driven tree only)
  pull,  ///< lee2010 slide 16, receiver-initiated
  push,  ///< lee2010 slide 16, sender-initiated
};

/// "off", "pull", "push".
const char* to_string(MigrationMode mode);
/// Parses "off", "pull", "push"; nullopt for anything else.
std::optional<MigrationMode> migration_from_string(std::string_view text);

/// Queue balancing (papers/lee2010 slide 17): what migration minimises.
enum class BalanceMode {
  off,  ///< the queue-length rule: only towards a queue 2 or more shorter, half the difference
  tll,  ///< the total of the two ends' normalised loads
  mll,  ///< the larger of the two ends' normalised loads
};
/// "off", "tll", "mll".
const char* to_string(BalanceMode mode);
/// Parses "off", "tll", "mll"; nullopt for anything else.
std::optional<BalanceMode> balance_from_string(std::string_view text);

class Migration {
 public:
  /// `retry` (seconds): a child that rejected a pull is not asked again before this.
  /// Throws std::invalid_argument for a balance without migration.
  explicit Migration(MigrationMode mode = MigrationMode::off, Seconds retry = 0.5, BalanceMode balance = BalanceMode::off);

  MigrationMode mode() const { return mode_; }
  BalanceMode balance() const { return balance_; }
  bool enabled() const { return mode_ != MigrationMode::off; }

  // ---- backfilling counters (slides 13, 15) ---------------------------------------
  /// buffer[chosen] is being assigned: every task ahead of it (that it bypasses) gets
  /// BC + 1; the chosen task's BC is forgotten.
  void on_assign(const std::deque<TaskRef>& buffer, std::size_t chosen);
  /// BC of a buffered task (0 if never bypassed).
  std::uint32_t bc(TaskId task) const;
  void set_bc(TaskId task, std::uint32_t bc);
  /// NBC: the maximum BC over `buffer` (0 when empty).
  std::uint32_t nbc(const std::deque<TaskRef>& buffer) const;

  // ---- sender side: answering a pull ------------------------------------------------
  /// Indices into state.buffer of the tasks to give back for a pull of `count` tasks from
  /// a target whose NBC is `target_nbc`: from the back of the buffer (the tasks this node
  /// would start last), keeping the first max(1, cores) for itself, skipping tasks with
  /// BC < target_nbc and tasks this node gave back before. Sorted descending.
  std::vector<std::size_t> pick_for_pull(const NodeState& state, std::uint32_t count, std::uint32_t target_nbc) const;
  /// `task` was given back by this node (it will never give it back again).
  void gave_back(TaskId task);

  // ---- receiver side: pulling from children -----------------------------------------
  /// The pull to send now, if any: `state` has requests that the buffer cannot serve and
  /// some child holds more tasks than it computes at once (its estimated queue, from the
  /// tasks in flight to it, is the longest, lee2010 slide 16). Records the pull as
  /// outstanding. Called by the core after each event.
  std::optional<action::SendPull> next_pull(const NodeState& state);
  /// A re-plan takes back `count` waiting tasks from `child` (docs/live-model.md): a pull
  /// whatever the mode (every node answers its parent's pulls), recorded as outstanding.
  action::SendPull reclaim(ChildId child, std::uint32_t count) {
    outstanding_[child] += count;
    ++pulls_sent_;
    return action::SendPull{child, count, 0};
  }
  /// A child answered (tasks given back plus tasks rejected); a pull it answered with no
  /// task puts it on hold for `retry` seconds, doubled after each such answer in a row
  /// (up to 16 x retry), so an idle node does not poll a child that has nothing to give.
  void answered(ChildId child, std::size_t answered, std::uint32_t rejected, Seconds now);
  /// Whether `child` answered its last pulls with nothing and is on hold until after `now`.
  bool on_hold(ChildId child, Seconds now) const {
    const auto h = hold_until_.find(child);
    return h != hold_until_.end() && h->second > now;
  }
  /// When a child on hold may be asked again while this node is idle; nullopt: no need.
  std::optional<Seconds> next_deadline(const NodeState& state) const;
  /// Tasks asked of `child` and not answered yet.
  std::uint32_t outstanding(ChildId child) const;
  void child_left(ChildId child);

  // ---- PUSH, sender side (slide 16) -------------------------------------------------
  /// The parent's status, as last heard.
  void heard_status(const PushStatus& status) { parent_status_ = status; }
  const PushStatus& parent_status() const { return parent_status_; }
  /// The push to send now, if any: mode push, not the root, no push awaiting its answer,
  /// the parent not on hold, and the parent has free requesters whose queue is at least 2
  /// shorter than this node's buffer. Takes the tasks out of state.buffer (they wait for
  /// the answer, see push_answered); at most half the difference, at most `free`.
  std::optional<action::PushTasks> next_push(NodeState& state);
  /// The parent's answer to the push in flight: `refused` go back to the back of
  /// state.buffer with their counters; returns the tasks it took (given back for good).
  /// Throws std::invalid_argument when no push waits or `refused` names a task not pushed.
  std::vector<TaskRef> push_answered(NodeState& state, const std::vector<TaskRef>& refused);
  /// Tasks pushed, waiting for the parent's answer.
  std::size_t pushing() const { return pushing_.size(); }

  // ---- PUSH, receiver side ----------------------------------------------------------
  /// What this node would tell child `child` now: its requests other than the child's
  /// that the buffer cannot serve, if the child's estimated queue is at least 2 longer
  /// than the shortest of theirs; {0, 0, 0} otherwise.
  PushStatus status_for(const NodeState& state, ChildId child) const;
  /// A push from `child` was answered with these refused tasks: sent by push_replies().
  void answer_push(ChildId child, std::vector<TaskRef> refused);
  /// The statuses and answers to send now (mode push; a status only when it changed
  /// since the last one sent to that child).
  std::vector<action::SendPushReply> push_replies(const NodeState& state);
  void count_pushed_in(std::size_t n) { tasks_pushed_in_ += n; }
  // ---- counters (docs/migration.md) -------------------------------------------------
  std::uint64_t pulls_sent() const { return pulls_sent_; }
  std::uint64_t tasks_pulled() const { return tasks_pulled_; }      ///< given back to this node
  std::uint64_t tasks_given() const { return tasks_given_; }        ///< given back by this node
  std::uint64_t rejects() const { return rejects_; }               ///< tasks of pulls rejected to this node
  void count_pulled(std::size_t n) { tasks_pulled_ += n; }
  std::uint64_t pushes_sent() const { return pushes_sent_; }
  std::uint64_t tasks_pushed_in() const { return tasks_pushed_in_; }  ///< pushed to this node and taken
  std::uint64_t push_refused() const { return push_refused_; }       ///< tasks this node pushed, refused

  // ---- queue balancing (slide 17) ---------------------------------------------------
  /// Normalised load of `to` (the executor or a child's subtree) with `extra` tasks' worth
  /// of demand added (negative: taken away): the largest, over cores, memory and disk,
  /// of the demand it holds over its capacity (resources of capacity 0 are not counted;
  /// cores count at least 1).
  static double load(const NodeState& state, const Target& to, const Demand& extra = {});
  /// Balance on: how many waiting tasks moving from child `from` to requester `to` lowers
  /// the objective (TLL: the sum of the two loads; MLL: the larger) the most, each task
  /// holding `from`'s mean demand per task in flight; at most `limit`. 0: none.
  std::uint32_t balanced_count(const NodeState& state, ChildId from, const Target& to, std::uint32_t limit) const;

 private:
  /// The pull to make under queue balancing (next_pull with balance on).
  std::optional<action::SendPull> next_balanced_pull(const NodeState& state, std::uint64_t asked);
  /// The status for `child` under queue balancing (status_for with balance on).
  PushStatus balanced_status(const NodeState& state, ChildId child) const;

  MigrationMode mode_;
  BalanceMode balance_ = BalanceMode::off;
  Seconds retry_;
  std::unordered_map<TaskId, std::uint32_t> bc_;
  std::unordered_set<TaskId> given_back_;
  std::map<ChildId, std::uint32_t> outstanding_;
  std::map<ChildId, Seconds> hold_until_;
  std::map<ChildId, std::uint32_t> rejected_in_row_;  ///< doubles the hold, up to 16 x retry
  std::uint64_t pulls_sent_ = 0;
  std::uint64_t tasks_pulled_ = 0;
  std::uint64_t tasks_given_ = 0;
  std::uint64_t rejects_ = 0;
  // PUSH
  PushStatus parent_status_;
  std::vector<std::pair<TaskRef, std::uint32_t>> pushing_;  ///< in flight to the parent, with BCs
  Seconds parent_hold_until_ = 0;
  std::uint32_t parent_refused_in_row_ = 0;
  std::map<ChildId, PushStatus> status_sent_;  ///< children last told a non-zero status
  std::vector<std::pair<ChildId, std::vector<TaskRef>>> answers_;
  std::uint64_t pushes_sent_ = 0;
  std::uint64_t tasks_pushed_in_ = 0;
  std::uint64_t push_refused_ = 0;
};

}  // namespace treefarm::core
