#pragma once
/// @file TreeHarness.hpp
/// An in-memory tree of NodeSchedulers for the tests (h11's ConnectionPair, HyperQueue's
/// TestComm): no sockets, no threads, no sleeps. A discrete-event queue with a simulated
/// clock carries each node's actions to the nodes they concern as events:
///   RequestWork   -> the parent's WorkRequested{child}        (after the node's latency)
///   SendTask      -> the child's TaskArrived and the sender's SendDone (after the child's
///                    link time)
///   StartTask     -> the node's LocalTaskFinished (after the task's duration), then the
///                    executor's WorkRequested{executor, 1}
///   ForwardResult -> the parent's ResultArrived{child}        (after the node's latency)
///   SendPolicyMessage -> the other end's PolicyMessage         (after the lower node's latency)
/// With every SendTask, the sender also gets TransferObserved{child, bytes, link time}
/// (§5.1.4 learning) just before its SendDone. A node whose next_deadline() is set gets a
/// Tick then (until the run is complete). Node v is named "n<v>"; every node gets a plan
/// (NodeConfig::plan, used by "lp"): TreeSpec::plans, or proportional_plans() if empty.
/// Each node has an executor of C slots that asks for C tasks at start. Everything is
/// deterministic: events at equal times are delivered in the order they were queued.
/// Every delivered event and every action is recorded; emptiness_check() ends a test.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/NodeScheduler.hpp"

namespace treefarm::core::testing {

/// One node of the tree. Node 0 is the root; the child id a parent uses for node v is
/// ChildId{v}.
struct NodeSpec {
  std::size_t parent = 0;           ///< Index of the parent (ignored for node 0).
  std::uint32_t cores = 1;          ///< Executor slots C (0: the node only relays).
  std::uint32_t buffer = 4;         ///< Bound B on its buffer.
  std::vector<Seconds> task_seconds{1.0};  ///< Task duration per app (one value: all apps).
  Seconds link_seconds = 0.1;       ///< Time of a task transfer from the parent.
  /// bytes/s of the link from the parent; if > 0, a task of app k takes bytes(k)/bandwidth
  /// (apps with bytes > 0) instead of link_seconds.
  double link_bandwidth = 0;
  Seconds latency_seconds = 0.01;   ///< Time of a request or result to the parent.
  /// bytes of memory (papers/lee2010 slide 19); > 0: the node's NodeConfig declares it
  /// and its cores, and its executor is checked to start only tasks that fit.
  std::uint64_t memory = 0;
};

struct TreeSpec {
  std::string policy = "fcfs";      ///< Passed to make_policy() on every node.
  std::vector<AppParams> apps;
  std::vector<NodeSpec> nodes;      ///< nodes[0] is the root.
  bool one_port = true;
  /// Calibrated platform (§5.1.4): ChildInfo.bandwidth = the link's bytes/s (link_bandwidth,
  /// or 1/link_seconds bytes-per-task units) and NodeConfig::local_seconds = task_seconds.
  bool calibrated = false;
  /// Per node, its plan; empty: proportional_plans(*this).
  std::vector<std::optional<NodePlan>> plans;
  /// Task migration on every node (papers/lee2010, docs/migration.md).
  MigrationMode migration = MigrationMode::off;
  BalanceMode balance = BalanceMode::off;   ///< Queue balancing over it (slide 17).
};

/// A simple hand-made plan: node v computes app k at cores·w(k)/Σw / t_v(k) tasks/s (its
/// executor busy, time shared by weight; links ignored), and sends each child the sum of
/// its subtree's local rates.
std::vector<std::optional<NodePlan>> proportional_plans(const TreeSpec& spec);
/// The name the harness gives node v.
std::string node_name(std::size_t v);

/// One entry of the harness's log: an event delivered to a node, or an action it emitted.
struct Record {
  Seconds time = 0;
  std::size_t node = 0;
  std::variant<Event, Action> what;
};

/// What a step hook is told: a node handled `event` and returned `actions`.
struct Step {
  std::size_t node = 0;
  Seconds time = 0;
  const Event* event = nullptr;
  const std::vector<Action>* actions = nullptr;
  std::size_t buffer_before = 0;          ///< state().buffer.size() before the event.
  std::uint64_t requested_before = 0;     ///< state().requested_from_parent before it.
};

class TreeHarness {
 public:
  explicit TreeHarness(TreeSpec spec);

  /// Queues ChildJoined at every parent, calls start() on every node and queues each
  /// executor's first request (WorkRequested{executor, C}), all at time 0.
  void start();
  /// Delivers the next event; false if the queue is empty.
  bool step();
  /// Steps until the queue is empty (or max_steps, then the test fails).
  void run(std::size_t max_steps = 5'000'000);

  /// At time `at`, node v and its subtree die: the parent gets ChildLeft{v}; events to
  /// the dead nodes, and messages from them still on the wire, are dropped.
  void kill(std::size_t v, Seconds at);

  /// Called after every handle() (after the actions were recorded and carried out).
  std::function<void(const TreeHarness&, const Step&)> on_step;

  /// No pending event, the run complete (RunComplete once), every task recorded done
  /// exactly once, and on every live node: nothing buffered, nothing in flight, the
  /// executor idle and the port free.
  ::testing::AssertionResult emptiness_check() const;

  const NodeScheduler& node(std::size_t v) const { return *nodes_.at(v); }
  std::size_t size() const { return nodes_.size(); }
  const TreeSpec& spec() const { return spec_; }
  const std::vector<std::size_t>& children(std::size_t v) const { return children_.at(v); }
  bool alive(std::size_t v) const { return alive_.at(v); }
  /// Whether node v has been sent a WorkRequested (from its executor or a child).
  bool asked(std::size_t v) const { return asked_.at(v); }
  Seconds now() const { return now_; }
  const std::vector<Record>& log() const { return log_; }
  std::size_t run_complete_count() const { return run_complete_count_; }
  /// Root: non-duplicate TaskCompleted actions per task, and duplicate ones in all.
  const std::map<TaskId, std::size_t>& completions() const { return completions_; }
  std::size_t duplicate_completions() const { return duplicate_completions_; }
  /// Task migration: pulls sent, tasks given back to a parent.
  std::size_t pulls() const { return pulls_; }
  std::size_t pushes() const { return pushes_; }
  std::size_t migrated() const { return migrated_; }
  /// Executor slots in use on node v.
  std::uint32_t running(std::size_t v) const { return running_.at(v); }

 private:
  struct Pending {
    Seconds time = 0;
    std::uint64_t seq = 0;
    std::size_t to = 0;
    std::size_t from = 0;   ///< Sending node (== to for the node's own executor/port).
    std::optional<Event> event;   ///< Empty: the kill of node `to`.
  };
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };

  void push(Seconds at, std::size_t to, std::size_t from, Event e);
  void deliver(std::size_t v, const Event& e);
  void carry_out(std::size_t v, const std::vector<Action>& actions);
  void kill_now(std::size_t v);
  Seconds duration(std::size_t v, TaskRef task) const;
  Seconds link_time(std::size_t child, TaskRef task) const;
  void schedule_tick(std::size_t v);

  TreeSpec spec_;
  std::vector<std::unique_ptr<NodeScheduler>> nodes_;
  std::vector<std::vector<std::size_t>> children_;
  std::vector<bool> alive_;
  std::vector<bool> asked_;
  std::vector<std::uint32_t> running_;
  std::vector<std::optional<Seconds>> tick_at_;
  std::priority_queue<Pending, std::vector<Pending>, Later> queue_;
  std::uint64_t seq_ = 0;
  Seconds now_ = 0;
  std::vector<Record> log_;
  std::size_t run_complete_count_ = 0;
  std::map<TaskId, std::size_t> completions_;
  std::size_t duplicate_completions_ = 0;
  std::size_t pulls_ = 0;
  std::size_t pushes_ = 0;
  std::size_t migrated_ = 0;
};

/// A short printable form of an event or an action, for failure messages.
std::string describe(const Event& e);
std::string describe(const Action& a);

}  // namespace treefarm::core::testing
