#pragma once
/// @file NodeState.hpp
/// The state of one node scheduler, as its policy sees it (read-only for policies).

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/core/Events.hpp"
#include "runtime/core/Migration.hpp"

namespace treefarm::core {

/// What every node knows of an application (the master sends it down the tree).
struct AppParams {
  std::string name;
  double weight = 1.0;            ///< w(k) > 0
  std::uint64_t tasks = 0;        ///< Tasks in the bag.
  double bytes = 0;               ///< b(k): bytes sent per task.
  double flops = 0;               ///< c(k): flop per task.
  std::uint32_t cores_per_task = 1;
  // Multi-resource requirements (papers/lee2010 slides 19-20; docs/migration.md,
  // "Requirements"): each 0 = "don't care". A task runs only on a node that has them.
  std::uint64_t memory_per_task = 0;  ///< bytes of memory it holds while it runs
  std::uint64_t disk_per_task = 0;    ///< bytes of free disk it needs
  double min_speed = 0;               ///< flop/s per core, the least it may run on
  /// Some requirement beyond one core (cores_per_task > 1 or any of the three above).
  bool constrained() const { return cores_per_task > 1 || memory_per_task > 0 || disk_per_task > 0 || min_speed > 0; }
};

/// Whether a task of `app` may run on a node with these resources (papers/lee2010 slide
/// 19: each requirement is met or "don't care"). A resource given as 0 is unknown and
/// taken as sufficient, except cores: 0 cores run nothing.
bool fits(const AppParams& app, std::uint32_t cores, std::uint64_t memory, std::uint64_t disk, double speed);

/// What one task of `app` holds.
inline Demand demand_of(const AppParams& app) {
  return {static_cast<double>(app.cores_per_task), static_cast<double>(app.memory_per_task), static_cast<double>(app.disk_per_task)};
}

/// The steady-state rates a node should follow (papers/beaumont2006 §4.1), from the LP
/// solution: tasks/s of each application to compute locally and to send to each child.
struct NodePlan {
  std::vector<double> local;                             ///< tasks/s per app, computed here
  std::map<std::string, std::vector<double>> children;   ///< child name -> tasks/s per app sent to it
};

/// Static configuration of a node scheduler.
struct NodeConfig {
  std::string name;               ///< This node's name (for plans and messages).
  bool is_root = false;
  std::uint32_t buffer = 10;      ///< Bound B on buffered tasks (papers/beaumont2006 §4).
  std::vector<AppParams> apps;
  /// One-port model: one send to a child at a time, the port is busy until SendDone.
  bool one_port = true;
  /// LP rates for this node, when the run has them (policy "lp"; others may use them).
  std::optional<NodePlan> plan;
  /// Cores the local executor computes with (0 = unknown: policies learn it from the
  /// executor's requests, or the node only forwards).
  std::uint32_t cores = 0;
  /// Calibrated seconds of one task of each app on this node (0 = unknown: learn it).
  std::vector<double> local_seconds;
  /// A task lost with this many dead children of this node is not re-queued again but
  /// reported failed (action::TaskAbandoned), instead of taking down worker after worker.
  std::uint32_t max_task_losses = 3;
  /// Root, resumed runs (master --resume): per application, the tasks already completed in
  /// an earlier run (from the master's journal). Empty = none; otherwise one vector per
  /// application, each of its `tasks` size. These tasks are never drawn from the bag and
  /// count as completed from the start; a late result for one is a duplicate.
  std::vector<std::vector<bool>> done_before;
  /// Task deadlines (docs/fault-tolerance.md, "Task deadlines"): a task sent to a child is
  /// re-issued elsewhere when the child still holds it at
  ///   sent + max(deadline_floor, deadline_factor x max(t x q, turnaround)),
  /// t = seconds per task of its application (local_seconds: calibrated or learnt here),
  /// q = tasks the child's subtree holds counting this one (the tasks queued ahead of it),
  /// turnaround = the child's mean seconds from send to result so far. 0 disables.
  double deadline_factor = 0;
  double deadline_floor = 60;     ///< seconds; the least time a child is given for a task.
  /// A task is re-issued at most this many times (then its holders are waited for).
  std::uint32_t max_reissues = 2;
  /// Migration of waiting tasks between neighbours (papers/lee2010 slide 16,
  /// docs/migration.md): off, or pull.
  MigrationMode migration = MigrationMode::off;
  /// seconds: a child that rejected a pull is not asked again before this.
  Seconds migration_retry = 0.5;
  /// Queue balancing (papers/lee2010 slide 17, docs/migration.md): off (the queue-length
  /// rule), or migration moves what lowers the total (tll) or the largest (mll) normalised
  /// load of the two ends. Needs migration pull or push.
  BalanceMode balance = BalanceMode::off;
  /// This node's own resources besides `cores` (0 = unknown): the requirements of
  /// AppParams are checked against them, and queue balancing normalises by them.
  std::uint64_t memory = 0;       ///< bytes
  std::uint64_t disk = 0;         ///< bytes, free
  double speed = 0;               ///< flop/s per core
};

/// How sends to children share the out-port.
enum class PortModel {
  one_port,          ///< One send at a time (NodeConfig::one_port): port_busy until SendDone.
  multi_port,        ///< Concurrent sends, no port state (SendDone accepted and ignored).
  one_port_per_app,  ///< One send at a time per application and per child ("pbc", §4.4).
};

/// One pending single-task request.
struct PendingRequest {
  Target from;
  Seconds since = 0;              ///< When it arrived.
  std::uint64_t seq = 0;          ///< Arrival order.
};

/// A connected child.
struct ChildState {
  ChildInfo info;
  double bandwidth = 0;           ///< bytes/s: from info, or learnt from TransferObserved.
  std::uint64_t in_flight = 0;    ///< Tasks sent into its subtree, not yet reported done.
  std::uint64_t sent = 0;         ///< Tasks sent to it so far.
  /// seconds: mean time from sending a task to its result (EWMA; 0 = no result yet).
  Seconds turnaround = 0;
  /// What its subtree can run and has, as it reported (event::CapacityReported);
  /// nullopt: not reported (a run without requirements; with them a child reports before
  /// its first request) — fits() takes it to run every application, balancing its info.cores.
  std::optional<SubtreeCapacity> capacity;
  Demand held;                    ///< What the tasks in flight to it hold (queue balancing).
};

/// Everything a policy may base its choice on.
struct NodeState {
  NodeConfig config;
  Seconds now = 0;
  std::deque<TaskRef> buffer;                 ///< Received, not yet assigned (arrival order).
  std::deque<PendingRequest> requests;        ///< Single-task requests, arrival order.
  std::uint64_t local_requests = 0;           ///< Of those, the local executor's.
  std::map<ChildId, ChildState> children;
  PortModel port = PortModel::one_port;       ///< Set by the core from config and policy.
  bool port_busy = false;                     ///< A send to a child is in progress.
  std::map<ChildId, AppId> sending;           ///< one_port_per_app: sends in progress.
  std::uint64_t requested_from_parent = 0;    ///< Requested, not yet arrived.
  std::vector<std::uint64_t> drawn;           ///< Root: cursor of the bag per app (next index considered).
  std::vector<std::uint64_t> done_ahead;      ///< Root: tasks at or past the cursor done in an earlier run.
  std::vector<std::uint64_t> started_local;   ///< Tasks started locally, per app.
  std::vector<double> local_seconds;          ///< Mean local task duration per app (0: none yet).
  /// Per app: whether this node's executor may run it (fits() with its own resources).
  std::vector<bool> local_fits;
  /// Some buffered task may not go to some target here: an application does not fit the
  /// executor or a child's subtree (as reported), or a task a child gave back waits
  /// (returned_by). Policies then look past the oldest task (first_task_for). False on
  /// every run without requirements or migration, which keeps the per-task path as it was.
  bool constrained = false;
  /// Tasks a child gave back (PULL, or taken from its PUSH), by that child, until they are
  /// assigned: such a task does not go back to it while another requester could take it
  /// (papers/lee2010 slide 16: the task moves to the receiver; sent straight back, it could
  /// never leave again, the visited-once rule forbidding a second give-back).
  std::unordered_map<TaskId, ChildId> returned_by;
  /// Task deadlines: the earlier holders of re-issued tasks (each still holds a "late
  /// copy"). A task never goes to a target that holds a copy of it: a task a child gave
  /// back can be one a sibling still holds late (the sibling would take it for a
  /// duplicate and drop its parent: "task sent twice").
  std::unordered_map<TaskId, std::vector<Target>> late_copies;
  /// Root, max_retries: a task reopened after a failed attempt, by the target the attempt
  /// ran in (a child's subtree, or the executor), until it is assigned again: it goes to
  /// another target while one exists that it fits (a retry "on another node"); with none,
  /// to the same one (never held back for ever).
  std::unordered_map<TaskId, Target> failed_in;
  Demand local_held;                          ///< What the tasks the executor runs hold.

  /// Root: tasks of app k still in the bag (not yet drawn, not done in an earlier run).
  std::uint64_t source_remaining(AppId k) const;
  /// A request from this target could be served now (the port is free for children).
  bool can_serve(const Target& t) const {
    if (t.local) return true;
    switch (port) {
      case PortModel::one_port: return !config.one_port || !port_busy;
      case PortModel::multi_port: return true;
      case PortModel::one_port_per_app: return !sending.contains(t.child);
    }
    return false;
  }
  /// No request of a child can be served now (one-port, a send in progress): only the
  /// executor's requests can, and a policy need not look at the others.
  bool children_blocked() const { return port == PortModel::one_port && config.one_port && port_busy; }
  /// A task of application k may go to `t`: the executor has what it requires, or the
  /// child's subtree reported a node that has (papers/lee2010 slide 19).
  bool fits(const Target& t, AppId k) const {
    if (t.local) return k.value >= local_fits.size() || local_fits[k.value];
    auto it = children.find(t.child);
    if (it == children.end() || !it->second.capacity) return true;
    const auto& f = it->second.capacity->fits;
    return k.value >= f.size() || f[k.value];
  }
  /// `task` was given back by child `t` and another pending requester could take it now.
  bool held_from_donor(const Target& t, TaskRef task) const {
    if (t.local || returned_by.empty()) return false;
    auto it = returned_by.find(task.id);
    if (it == returned_by.end() || it->second != t.child) return false;
    for (const PendingRequest& r : requests)
      if (r.from != t && can_serve(r.from) && fits(r.from, task.app())) return true;
    return false;
  }
  /// Every request that can be served can take the oldest buffered task: no requirement
  /// bars a target, no given-back task waits, no late copy is held. Policies then look at
  /// buffer.front() only (the per-task path of runs without requirements or migration).
  bool any_task_for_any() const { return !constrained && late_copies.empty() && failed_in.empty(); }
  /// A target other than `t` exists that a task of application k fits: a child, or the
  /// executor when this node computes.
  bool elsewhere(const Target& t, AppId k) const {
    if (!t.local && config.cores > 0 && fits(Target::executor(), k)) return true;
    for (const auto& [id, c] : children)
      if ((t.local || id != t.child) && fits(Target::to_child(id), k)) return true;
    return false;
  }
  /// `task` could be given to a request from `t` now (one_port_per_app: no send of its
  /// application in progress either; a task goes only where it fits).
  bool can_assign(const Target& t, TaskRef task) const {
    if (!can_serve(t)) return false;
    if (constrained && (!fits(t, task.app()) || held_from_donor(t, task))) return false;
    if (!late_copies.empty())
      if (auto it = late_copies.find(task.id); it != late_copies.end())
        for (const Target& holder : it->second)
          if (holder == t) return false;
    if (!failed_in.empty())
      if (auto it = failed_in.find(task.id); it != failed_in.end() && it->second == t && elsewhere(t, task.app()))
        return false;
    if (t.local || port != PortModel::one_port_per_app) return true;
    for (const auto& [child, app] : sending)
      if (app == task.app()) return false;
    return true;
  }
};

/// True when `seen` lists exactly the ids of `children`, in order — without allocating:
/// policies call it on the per-task path to notice that children joined or left.
inline bool same_children(const std::map<ChildId, ChildState>& children, const std::vector<ChildId>& seen) {
  if (children.size() != seen.size()) return false;
  auto it = seen.begin();
  for (const auto& [id, c] : children)
    if (id != *it++) return false;
  return true;
}

/// The ids of `children`, in order.
inline std::vector<ChildId> child_ids(const std::map<ChildId, ChildState>& children) {
  std::vector<ChildId> ids;
  ids.reserve(children.size());
  for (const auto& [id, c] : children) ids.push_back(id);
  return ids;
}

/// A choice of a policy: request requests[request] gets buffer[task].
struct Assignment {
  std::size_t request = 0;
  std::size_t task = 0;
};

/// The oldest buffered task that request `request` can be given now (can_assign), or
/// nullopt. When state.any_task_for_any() that is the first one.
std::optional<std::size_t> first_task_for(const NodeState& state, std::size_t request);

}  // namespace treefarm::core
