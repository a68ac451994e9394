#pragma once
/// @file Events.hpp
/// What goes into the node scheduler (events) and what comes out (actions). Plain
/// structs in std::variants: the adapters (ZeroMQ, SimGrid, the in-memory test harness)
/// turn sockets, executors and simulated activities into these events and carry out the
/// actions.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/core/Ids.hpp"

namespace treefarm::core {

/// What a node knows of a task.
struct TaskRef {
  TaskId id;
  AppId app() const { return id.app(); }
  bool operator==(const TaskRef&) const = default;
};

/// Task migration (papers/lee2010 slide 16): the answer to a pull, as the child sends it
/// (action::ReturnTasks) and as the parent receives it (event::TasksReturned).
struct ReturnedTasks {
  std::vector<TaskRef> tasks;        ///< Waiting tasks given back.
  std::vector<std::uint32_t> bcs;    ///< Their backfilling counters, same order.
  std::uint32_t rejected = 0;        ///< How many more of the pull were rejected.
};

/// Task migration, PUSH (papers/lee2010 slide 16; docs/migration.md): what a parent
/// tells a child of its residual capacity — the requests below it that its buffer cannot
/// serve (`free`, not counting the child's own), the shortest estimated queue among
/// those requesters (`queue`, tasks), and the parent's NBC (slide 15).
struct PushStatus {
  std::uint32_t free = 0;
  std::uint32_t queue = 0;
  std::uint32_t nbc = 0;
  bool operator==(const PushStatus&) const = default;
};

/// The resources queued and running tasks hold at a node or subtree (papers/lee2010 slide
/// 17: "for each resource, sum all jobs' requirements in the queue"), for queue balancing.
struct Demand {
  double cores = 0;
  double memory = 0;   ///< bytes
  double disk = 0;     ///< bytes
  Demand& operator+=(const Demand& d) { cores += d.cores; memory += d.memory; disk += d.disk; return *this; }
  Demand& operator-=(const Demand& d) { cores -= d.cores; memory -= d.memory; disk -= d.disk; return *this; }
};
/// What a subtree can run and has in all (papers/lee2010 slides 19-20: a node advertises
/// its resources): per application, whether some node of the subtree may run it
/// (`fits`), and the totals of its computing nodes' resources (0 = unknown). A node
/// reports its own to its parent (action::ReportCapacity) whenever it changes.
struct SubtreeCapacity {
  std::vector<bool> fits;
  std::uint64_t cores = 0;
  std::uint64_t memory = 0;   ///< bytes
  std::uint64_t disk = 0;     ///< bytes
  bool operator==(const SubtreeCapacity&) const = default;
};

/// What a node knows of a child when it joins.
struct ChildInfo {
  std::string name;                 ///< The child's node name.
  std::uint32_t cores = 0;          ///< Cores the child computes with.
  double bandwidth = 0;             ///< bytes/s of the link to it; 0 = unknown.
};

namespace event {
/// A task arrived from the parent (never at the root: the root draws from its bag).
struct TaskArrived { TaskRef task; };
/// The executor (target.local) or a child asks for `count` more tasks.
struct WorkRequested { Target from; std::uint32_t count = 1; };
/// The send of a task to `child` finished: the out-port is free again (one-port model;
/// accepted and ignored under multi-port).
struct SendDone { ChildId child; };
/// The local executor finished a task.
struct LocalTaskFinished { TaskRef task; Seconds compute_seconds = 0; };
/// A child reported a task of its subtree done.
struct ResultArrived { ChildId child; TaskRef task; };
/// A child connected.
struct ChildJoined { ChildId child; ChildInfo info; };
/// A child is gone (connection dropped or declared dead): its tasks are re-queued.
struct ChildLeft { ChildId child; };
/// An observation of the link to a child: `bytes` took `seconds` (§5.1.4 learning).
struct TransferObserved { ChildId child; double bytes = 0; Seconds seconds = 0; };
/// A timer the core asked for through next_deadline() expired.
struct Tick {};
/// A policy's message from the parent (`from_parent`) or from child `child`: the payload
/// of an action::SendPolicyMessage of the same policy on that node, carried unchanged
/// (opaque bytes; the policy checks them, a malformed one is a ProtocolError). Used by
/// "data-centric" (papers/beaumont2006 §4.5) for subtree reports and plans.
struct PolicyMessage {
  bool from_parent = false;
  ChildId child{};                      ///< Sender when !from_parent.
  std::vector<std::uint8_t> payload;
};
/// Root only: tasks recorded done whose results turned out forged (the master caught
/// their node cheating) are done again: each is marked not done and put
/// back at the front of the buffer. Tasks not done, or already in flight, are ignored.
struct TasksReopened { std::vector<TaskRef> tasks; };
/// Task migration, PULL (papers/lee2010 slide 16; docs/migration.md): the parent asks
/// for up to `count` waiting tasks whose backfilling counter is at least `nbc` (its NBC).
struct PullRequested { std::uint32_t count = 1; std::uint32_t nbc = 0; };
/// Task migration: child `child` gave back `tasks` (waiting tasks it held, each with its
/// backfilling counter in `bcs`, same order) and rejected `rejected` more of a pull.
struct TasksReturned : ReturnedTasks {
  ChildId child{};
};
/// Task migration, PUSH: child `child` pushes `tasks` (waiting tasks it holds, with their
/// backfilling counters in `bcs`) to this node, which takes what its idle requesters can
/// use now and refuses the rest (action::SendPushReply).
struct TasksPushed {
  ChildId child{};
  std::vector<TaskRef> tasks;
  std::vector<std::uint32_t> bcs;
};
/// Task migration, PUSH: the parent's status (`status`), and when `answer`, its answer
/// to this node's push: `refused` stay here, the rest of the push is the parent's now.
struct PushAnswered {
  bool answer = false;
  std::vector<TaskRef> refused;
  PushStatus status;
};
/// Child `child` reported what its subtree can run and has (it sends it before its first
/// request, and again whenever it changes).
struct CapacityReported {
  ChildId child{};
  SubtreeCapacity capacity;
};
/// Root, a re-plan (docs/live-model.md): the LP was solved again from the platform's
/// online estimates; this node's new rates (NodePlan's fields: tasks/s per application
/// computed here, and sent to each child by name). The policy switches to them in place
/// (Policy::replan); nothing held or in flight changes hands.
struct PlanChanged {
  std::vector<double> local;
  std::map<std::string, std::vector<double>> children;
};
}  // namespace event

using Event = std::variant<event::TaskArrived, event::WorkRequested, event::SendDone,
                           event::LocalTaskFinished, event::ResultArrived, event::ChildJoined,
                           event::ChildLeft, event::TransferObserved, event::Tick,
                           event::PolicyMessage, event::TasksReopened, event::PullRequested,
                           event::TasksReturned, event::TasksPushed, event::PushAnswered,
                           event::CapacityReported, event::PlanChanged>;

/// Name of the event's kind, for error messages.
std::string_view event_name(const Event& e);

namespace action {
/// Ask the parent for `count` more tasks (never at the root).
struct RequestWork { std::uint32_t count = 1; };
/// Send a task to a child.
struct SendTask { ChildId child; TaskRef task; };
/// Start a task on the local executor.
struct StartTask { TaskRef task; };
/// Send the result of a task up to the parent (not at the root).
struct ForwardResult { TaskRef task; };
/// At the root: a task is done. `duplicate` = it had already been recorded (dropped).
struct TaskCompleted { TaskRef task; bool duplicate = false; };
/// At the root: every task of every application is done.
struct RunComplete {};
/// A task was lost with NodeConfig::max_task_losses dead children: it is given up.
/// Not at the root, the adapter reports it up as a failed result (the parent then sees a
/// ResultArrived); at the root it is followed by TaskCompleted and counts as failed.
struct TaskAbandoned { TaskRef task; std::uint32_t losses = 0; };
/// Not at the root: a late copy's result of a re-issued task (task deadlines) came after
/// the first copy's result was forwarded: it is dropped as a duplicate (the adapter
/// forgets what it stored for it). The sender is not at fault: it was only slow.
/// At the root the same case is a TaskCompleted with duplicate = true.
struct LateResultDropped { TaskRef task; Target from; };
/// Send a policy's message to the parent (`to_parent`, never at the root) or to child
/// `child`; the receiver gets it as event::PolicyMessage. Small (tens to a few thousand
/// bytes), not ordered with tasks; losing one only delays the policy's adaptation.
struct SendPolicyMessage {
  bool to_parent = false;
  ChildId child{};                      ///< Receiver when !to_parent.
  std::vector<std::uint8_t> payload;
};
/// Task migration, PULL: ask child `child` for up to `count` waiting tasks with a
/// backfilling counter >= `nbc` (event::PullRequested there).
struct SendPull { ChildId child{}; std::uint32_t count = 1; std::uint32_t nbc = 0; };
/// Task migration: give `tasks` (with their backfilling counters) back to the parent and
/// reject `rejected` more of its pull (event::TasksReturned there). The node has
/// forgotten the tasks: the adapter drops their inputs.
struct ReturnTasks : ReturnedTasks {};
/// Task migration, PUSH: send `tasks` (with their backfilling counters) to the parent
/// (event::TasksPushed there). They wait, out of the buffer, for the parent's answer:
/// the adapter keeps their inputs until a DropTasks.
struct PushTasks {
  std::vector<TaskRef> tasks;
  std::vector<std::uint32_t> bcs;
};
/// Task migration, PUSH: tell child `child` this node's status, and when `answer`, answer
/// its push: `refused` stay with it (event::PushAnswered there).
struct SendPushReply {
  ChildId child{};
  bool answer = false;
  std::vector<TaskRef> refused;
  PushStatus status;
};
/// Task migration, PUSH: the parent took `tasks`: this node no longer holds them; the
/// adapter drops their inputs.
struct DropTasks { std::vector<TaskRef> tasks; };
/// Tell the parent what this node's subtree can run and has (event::CapacityReported
/// there). Never at the root.
struct ReportCapacity { SubtreeCapacity capacity; };
}  // namespace action

using Action = std::variant<action::RequestWork, action::SendTask, action::StartTask,
                            action::ForwardResult, action::TaskCompleted, action::RunComplete,
                            action::TaskAbandoned, action::LateResultDropped,
                            action::SendPolicyMessage, action::SendPull, action::ReturnTasks,
                            action::PushTasks, action::SendPushReply, action::DropTasks,
                            action::ReportCapacity>;

}  // namespace treefarm::core
