// NodeScheduler driven by scripted events: requests to the parent, protocol errors,
// children leaving, exactly-once recording at the root.
#include "runtime/core/NodeScheduler.hpp"

#include <string>

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

// Everything of a node's state an event could change.
struct Snapshot {
  std::vector<TaskRef> buffer;
  std::vector<std::pair<Target, std::uint64_t>> requests;
  std::uint64_t requested_from_parent = 0;
  bool port_busy = false;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> children;  // id, in_flight
  std::size_t in_flight = 0;
  std::uint64_t completed = 0;
  std::uint64_t duplicates = 0;
  Seconds now = 0;
  std::vector<std::uint64_t> drawn;
  std::vector<std::uint64_t> started_local;
  bool operator==(const Snapshot&) const = default;

  static Snapshot of(const NodeScheduler& n) {
    Snapshot s;
    const auto& st = n.state();
    s.buffer.assign(st.buffer.begin(), st.buffer.end());
    for (const auto& r : st.requests) s.requests.emplace_back(r.from, r.seq);
    s.requested_from_parent = st.requested_from_parent;
    s.port_busy = st.port_busy;
    for (const auto& [id, c] : st.children) s.children.emplace_back(id.value, c.in_flight);
    s.in_flight = n.in_flight();
    s.completed = n.completed();
    s.duplicates = n.duplicates();
    s.now = st.now;
    s.drawn = st.drawn;
    s.started_local = st.started_local;
    return s;
  }
};

// The event is rejected with a ProtocolError naming it and saying `why`, the state is
// unchanged, and no action came out.
void expect_rejected(NodeScheduler& node, const Event& e, Seconds now, const std::string& why) {
  const Snapshot before = Snapshot::of(node);
  try {
    node.handle(e, now);
    ADD_FAILURE() << describe(e) << " was accepted, expected a ProtocolError (" << why << ")";
  } catch (const ProtocolError& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find(std::string(event_name(e))), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  }
  EXPECT_TRUE(Snapshot::of(node) == before) << describe(e) << " changed the state although rejected";
}

TEST(NodeScheduler, EventNamesAreTheirStructNames) {
  EXPECT_EQ(event_name(event::TaskArrived{}), "TaskArrived");
  EXPECT_EQ(event_name(event::ResultArrived{}), "ResultArrived");
  EXPECT_EQ(event_name(event::Tick{}), "Tick");
  EXPECT_EQ(event_name(event::PullRequested{}), "PullRequested");
  EXPECT_EQ(event_name(event::TasksReturned{}), "TasksReturned");
}

TEST(NodeScheduler, RejectsBadConfigurations) {
  EXPECT_THROW(NodeScheduler(node_config(false, 4, {}), make_policy("fcfs")), std::invalid_argument);
  EXPECT_THROW(NodeScheduler(node_config(false, 0, {app("a", 1, 1)}), make_policy("fcfs")), std::invalid_argument);
  EXPECT_THROW(NodeScheduler(node_config(false, 4, {app("a", 0, 1)}), make_policy("fcfs")), std::invalid_argument);
  EXPECT_THROW(NodeScheduler(node_config(false, 4, {app("a", 1, 1)}), nullptr), std::invalid_argument);
  EXPECT_THROW(make_policy("no-such-policy"), std::invalid_argument);
}

TEST(NodeScheduler, WorkerRequestsExactlyTheRoomOnceSomethingBelowAsks) {
  auto node = make_node(node_config(false, 3, {app("a", 1, 10)}));
  // Nothing below has asked for work yet: no request (a subtree without cores never asks).
  EXPECT_EQ(names(node->start(0)), Strings{});
  EXPECT_EQ(names(node->handle(event::WorkRequested{Target::executor(), 2}, 0)), Strings{"RequestWork x3"});
  EXPECT_EQ(node->state().requested_from_parent, 3u);
  // Each task goes straight to the executor, leaving room for one more.
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 0)}, 1)), (Strings{"StartTask 0:0", "RequestWork x1"}));
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 1)}, 1)), (Strings{"StartTask 0:1", "RequestWork x1"}));
  // No request left to serve: the task is buffered, and there is no room to ask for more.
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 2)}, 2)), Strings{});
  EXPECT_EQ(node->state().buffer.size() + node->state().requested_from_parent, 3u);
  EXPECT_EQ(names(node->start(2)), Strings{}) << "start() again is harmless";
  // A finished task is forwarded; the next request takes the buffered task and asks again.
  EXPECT_EQ(names(node->handle(event::LocalTaskFinished{task(0, 0), 1.0}, 3)), Strings{"ForwardResult 0:0"});
  EXPECT_EQ(names(node->handle(event::WorkRequested{Target::executor(), 1}, 3)),
            (Strings{"StartTask 0:2", "RequestWork x1"}));
  EXPECT_EQ(node->state().local_seconds[0], 1.0);
}

// With B >= 16 a node asks in batches of B/8, also while its buffer is empty as long as
// tasks are on their way: a forwarder or a worker that hands each task on at once would
// otherwise ask for every task or two (a forwarder of no-op tasks sent one Request per two
// Results up the tree).
TEST(NodeScheduler, AnEmptyBufferWithTasksOnTheirWayWaitsForAWholeBatch) {
  auto node = make_node(node_config(false, 64, {app("a", 1, 100)}));
  node->start(0);
  EXPECT_EQ(names(node->handle(event::WorkRequested{Target::executor(), 1}, 0)), Strings{"RequestWork x64"});
  for (std::uint64_t i = 0; i < 8; ++i) {
    const double at = 1.0 + static_cast<double>(i);
    const Strings expected = i < 7 ? Strings{"StartTask 0:" + std::to_string(i)}
                                   : Strings{"StartTask 0:7", "RequestWork x8"};
    EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, i)}, at)), expected) << "task " << i;
    EXPECT_EQ(names(node->handle(event::LocalTaskFinished{task(0, i), 0.5}, at + 0.5)),
              Strings{"ForwardResult 0:" + std::to_string(i)});
    EXPECT_EQ(names(node->handle(event::WorkRequested{Target::executor(), 1}, at + 0.5)), Strings{}) << "task " << i;
  }
  EXPECT_EQ(node->state().requested_from_parent, 64u);
}

TEST(NodeScheduler, NodeWithoutConsumersNeverRequests) {
  // A relay whose only child has no cores: the child never asks, so neither does it.
  auto node = make_node(node_config(false, 5, {app("a", 1, 10)}));
  EXPECT_EQ(names(node->start(0)), Strings{});
  EXPECT_EQ(names(node->handle(event::ChildJoined{ChildId{1}, ChildInfo{"c1", 0, 1e6}}, 0)), Strings{});
  EXPECT_EQ(names(node->handle(event::Tick{}, 1)), Strings{});
  EXPECT_EQ(node->state().requested_from_parent, 0u);
  // Once the child asks, the node fills its buffer.
  EXPECT_EQ(names(node->handle(event::WorkRequested{child(1), 1}, 2)), Strings{"RequestWork x5"});
}

TEST(NodeScheduler, ProtocolErrorsNameTheEventAndLeaveTheStateUnchanged) {
  // The root: a TaskArrived makes no sense there.
  auto root = make_node(node_config(true, 2, {app("a", 1, 3), app("b", 1, 2)}));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::WorkRequested{child(1), 1}, 1);  // sends 0:0 (or 1:0), port busy
  expect_rejected(*root, event::TaskArrived{task(0, 0)}, 5, "the root has no parent");
  expect_rejected(*root, event::WorkRequested{child(7), 1}, 5, "unknown child 7");
  expect_rejected(*root, event::WorkRequested{Target::executor(), 0}, 5, "a request for 0 tasks");
  expect_rejected(*root, event::ResultArrived{ChildId{1}, task(0, 3)}, 5, "task index 3 out of range");
  expect_rejected(*root, event::ResultArrived{ChildId{1}, task(2, 0)}, 5, "unknown application 2");
  expect_rejected(*root, event::ResultArrived{ChildId{1}, task(0, 2)}, 5, "never sent");
  expect_rejected(*root, event::ResultArrived{ChildId{4}, task(0, 0)}, 5, "unknown child 4");
  expect_rejected(*root, event::LocalTaskFinished{task(0, 0), 1}, 5, "the executor was not running this task");
  expect_rejected(*root, event::ChildJoined{ChildId{1}, {}}, 5, "already joined");
  expect_rejected(*root, event::ChildLeft{ChildId{3}}, 5, "unknown child 3");
  root->handle(event::SendDone{ChildId{1}}, 6);
  expect_rejected(*root, event::SendDone{ChildId{1}}, 7, "no send in progress");

  // A worker: tasks it did not ask for.
  auto worker = make_node(node_config(false, 2, {app("a", 1, 5)}));
  worker->start(0);
  expect_rejected(*worker, event::TaskArrived{task(0, 0)}, 1, "no task was requested");
  worker->handle(event::WorkRequested{Target::executor(), 1}, 1);  // asks for 2
  worker->handle(event::TaskArrived{task(0, 0)}, 2);                // started, asks 1 more
  worker->handle(event::TaskArrived{task(0, 1)}, 2);                // buffered
  worker->handle(event::TaskArrived{task(0, 2)}, 2);                // buffered, buffer full
  ASSERT_EQ(worker->state().buffer.size(), 2u);
  ASSERT_EQ(worker->state().requested_from_parent, 0u);
  expect_rejected(*worker, event::TaskArrived{task(0, 3)}, 3, "no task was requested");
  expect_rejected(*worker, event::LocalTaskFinished{task(0, 1), 1}, 3, "the executor was not running this task");
  expect_rejected(*worker, event::LocalTaskFinished{task(0, 4), 1}, 3, "the executor was not running this task");
  // Once there is room again, a task already here is still refused.
  worker->handle(event::LocalTaskFinished{task(0, 0), 1}, 4);
  worker->handle(event::WorkRequested{Target::executor(), 1}, 4);  // takes 0:1, asks 1
  expect_rejected(*worker, event::TaskArrived{task(0, 2)}, 5, "already here");
  expect_rejected(*worker, event::TaskArrived{task(0, 1)}, 5, "already here");
  expect_rejected(*worker, event::TaskArrived{task(0, 9)}, 5, "out of range");
  // And the node goes on normally after the rejections.
  EXPECT_EQ(names(worker->handle(event::TaskArrived{task(0, 3)}, 6)), Strings{});
  EXPECT_EQ(worker->state().now, 6.0);
}

TEST(NodeScheduler, ChildLeftRequeuesItsTasksFirstAndDropsItsRequests) {
  auto node = make_node(node_config(false, 4, {app("a", 1, 10)}, /*one_port=*/false));
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  node->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  node->handle(event::WorkRequested{child(1), 3}, 0);  // asks the parent for 4
  for (std::uint64_t i = 0; i < 4; ++i) node->handle(event::TaskArrived{task(0, i)}, 1);
  // Child 1's three requests took 0:0..0:2; 0:3 waits in the buffer.
  ASSERT_EQ(node->state().children.at(ChildId{1}).in_flight, 3u);
  node->handle(event::ResultArrived{ChildId{1}, task(0, 1)}, 2);
  node->handle(event::WorkRequested{child(1), 2}, 2);  // one served with 0:3, one pending
  ASSERT_EQ(node->state().requests.size(), 1u);
  ASSERT_EQ(node->state().children.at(ChildId{1}).in_flight, 3u);  // 0:0, 0:2, 0:3
  node->handle(event::TaskArrived{task(0, 4)}, 2);  // to child 1's pending request
  node->handle(event::WorkRequested{child(1), 1}, 2);  // pending: nothing buffered
  ASSERT_EQ(node->in_flight(), 4u);

  const auto out = node->handle(event::ChildLeft{ChildId{1}}, 3);
  EXPECT_EQ(names(out), Strings{}) << "no room: the re-queued tasks fill the buffer";
  EXPECT_TRUE(node->state().requests.empty()) << "the gone child's requests are dropped";
  const std::vector<TaskRef> requeued(node->state().buffer.begin(), node->state().buffer.end());
  EXPECT_EQ(requeued, (std::vector<TaskRef>{task(0, 0), task(0, 2), task(0, 3), task(0, 4)}));
  EXPECT_EQ(node->in_flight(), 0u);
  // Child 2 gets them, oldest task first.
  EXPECT_EQ(names(node->handle(event::WorkRequested{child(2), 2}, 4)),
            (Strings{"SendTask child 2 0:0", "SendTask child 2 0:2"}));
  EXPECT_EQ(names(node->handle(event::WorkRequested{child(2), 3}, 4)),
            (Strings{"SendTask child 2 0:3", "SendTask child 2 0:4"}))
      << "4 tasks are still requested from the parent: no room for more";
  EXPECT_EQ(node->state().requested_from_parent, 4u);
  // A late result of the dead child's task is still forwarded (the root deduplicates).
  EXPECT_EQ(names(node->handle(event::ResultArrived{ChildId{2}, task(0, 0)}, 5)), Strings{"ForwardResult 0:0"});
  expect_rejected(*node, event::ResultArrived{ChildId{1}, task(0, 2)}, 6, "unknown child 1");
}

TEST(NodeScheduler, ATaskLostWithMaxTaskLossesDeadChildrenIsGivenUp) {
  auto config = node_config(true, 1, {app("a", 1, 2)}, /*one_port=*/false);
  config.max_task_losses = 2;
  auto root = make_node(std::move(config));
  root->start(0);
  // First loss: 0:0 is re-queued and sent to the next child.
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 1)), Strings{"SendTask child 1 0:0"});
  EXPECT_EQ(names(root->handle(event::ChildLeft{ChildId{1}}, 2)), Strings{});
  root->handle(event::ChildJoined{ChildId{2}, {}}, 2);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 3)), Strings{"SendTask child 2 0:0"});
  // Second loss: given up, recorded (as done, the adapter marks it failed), not re-sent.
  EXPECT_EQ(names(root->handle(event::ChildLeft{ChildId{2}}, 4)),
            (Strings{"TaskAbandoned 0:0 after 2 losses", "TaskCompleted 0:0"}));
  EXPECT_EQ(root->completed(), 1u);
  root->handle(event::ChildJoined{ChildId{3}, {}}, 5);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(3), 2}, 5)), Strings{"SendTask child 3 0:1"});
}

TEST(NodeScheduler, RootRecordsEachTaskOnceAndCountsLateResultsAsDuplicates) {
  auto root = make_node(node_config(true, 2, {app("a", 1, 3)}, /*one_port=*/false));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 1)), Strings{"SendTask child 1 0:0"});
  // Child 1 is declared dead while it still computes 0:0: the task is re-queued first.
  EXPECT_EQ(names(root->handle(event::ChildLeft{ChildId{1}}, 2)), Strings{});
  EXPECT_EQ(root->state().buffer.front(), task(0, 0));
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 3)), Strings{"SendTask child 2 0:0"});
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{2}, task(0, 0)}, 4)), Strings{"TaskCompleted 0:0"});
  // Child 1 comes back and reports 0:0 late: it does not hold it any more, refused.
  root->handle(event::ChildJoined{ChildId{1}, {}}, 5);
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 5), ProtocolError);
  EXPECT_EQ(root->duplicates(), 0u);
  EXPECT_EQ(root->completed(), 1u);
  // The rest of the run completes with each task once, and RunComplete once.
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 2}, 6)),
            (Strings{"SendTask child 1 0:1", "SendTask child 1 0:2"}));
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{1}, task(0, 1)}, 7)), Strings{"TaskCompleted 0:1"});
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{1}, task(0, 2)}, 7)),
            (Strings{"TaskCompleted 0:2", "RunComplete"}));
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{1}, task(0, 2)}, 8), ProtocolError)
      << "a second result for a recorded task";
  EXPECT_TRUE(root->run_complete());
  EXPECT_EQ(root->completed(), 3u);
  EXPECT_EQ(root->duplicates(), 0u);
  EXPECT_EQ(root->in_flight(), 0u);
}

TEST(NodeScheduler, ResumedRootNeverDrawsTasksDoneBefore) {
  // Master --resume: tasks 0, 2 and 3 of a 5-task bag were journaled; only 1 and 4 are sent.
  auto config = node_config(true, 1, {app("a", 1, 5)}, /*one_port=*/false);
  config.done_before = {{true, false, true, true, false}};
  auto root = make_node(config);
  EXPECT_EQ(root->completed(), 3u);
  EXPECT_EQ(root->state().source_remaining(AppId{0}), 2u);
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 5}, 1)),
            (Strings{"SendTask child 1 0:1", "SendTask child 1 0:4"}));
  EXPECT_EQ(root->state().source_remaining(AppId{0}), 0u);
  // A result for a journaled task (never sent in this run) is refused, not a second completion.
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{1}, task(0, 2)}, 2), ProtocolError);
  EXPECT_EQ(root->completed(), 3u);
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{1}, task(0, 1)}, 3)), Strings{"TaskCompleted 0:1"});
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{1}, task(0, 4)}, 3)),
            (Strings{"TaskCompleted 0:4", "RunComplete"}));
  EXPECT_EQ(root->completed(), 5u);
}

TEST(NodeScheduler, ResumedRootWithEverythingDoneCompletesAtStart) {
  auto config = node_config(true, 1, {app("a", 1, 2)});
  config.done_before = {{true, true}};
  auto root = make_node(config);
  EXPECT_EQ(names(root->start(0)), Strings{"RunComplete"});
  EXPECT_TRUE(root->run_complete());
}

TEST(NodeScheduler, DoneBeforeOfTheWrongSizeIsRefused) {
  auto config = node_config(true, 1, {app("a", 1, 3)});
  config.done_before = {{true}};
  EXPECT_THROW(make_node(config), std::invalid_argument);
}

TEST(NodeScheduler, OnlyTheChildThatHoldsATaskMayReportIt) {
  // A late result of a re-queued task, and a forged result for a task sent to another
  // child, are refused (the adapter drops the sender); the holder's result counts.
  auto root = make_node(node_config(true, 2, {app("a", 1, 2)}, /*one_port=*/false));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  root->handle(event::WorkRequested{child(1), 1}, 0);  // 0:0 to child 1
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{2}, task(0, 0)}, 1), ProtocolError) << "forged by child 2";
  root->handle(event::ChildLeft{ChildId{1}}, 2);
  root->handle(event::ChildJoined{ChildId{3}, {}}, 3);
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{3}, task(0, 0)}, 4), ProtocolError) << "never sent to child 3";
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(3), 1}, 5)), Strings{"SendTask child 3 0:0"});
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{3}, task(0, 0)}, 6)), Strings{"TaskCompleted 0:0"});
  EXPECT_EQ(root->duplicates(), 0u);
}

TEST(NodeScheduler, ReopenedTasksAreDoneAgainFirstAndCountedOnce) {
  // Forged results: the master caught child 1 forging; 0:0 and 0:1, recorded from it, are
  // done again; a task not done (0:3) or never drawn is ignored.
  auto root = make_node(node_config(true, 2, {app("a", 1, 4)}, /*one_port=*/false));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  root->handle(event::WorkRequested{child(1), 2}, 0);  // 0:0, 0:1
  root->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 1);
  root->handle(event::ResultArrived{ChildId{1}, task(0, 1)}, 1);
  EXPECT_EQ(root->completed(), 2u);
  root->handle(event::ChildLeft{ChildId{1}}, 2);
  EXPECT_EQ(names(root->handle(event::TasksReopened{{task(0, 1), task(0, 0), task(0, 3)}}, 2)), Strings{});
  EXPECT_EQ(root->completed(), 0u);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 4}, 3)),
            (Strings{"SendTask child 2 0:0", "SendTask child 2 0:1", "SendTask child 2 0:2", "SendTask child 2 0:3"}));
  for (std::uint64_t i = 0; i < 3; ++i) root->handle(event::ResultArrived{ChildId{2}, task(0, i)}, 4);
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{2}, task(0, 3)}, 4)),
            (Strings{"TaskCompleted 0:3", "RunComplete"}));
  EXPECT_EQ(root->completed(), 4u);
  EXPECT_EQ(root->duplicates(), 0u);
  // Only the root reopens.
  auto inner = make_node(node_config(false, 2, {app("a", 1, 4)}));
  EXPECT_THROW(inner->handle(event::TasksReopened{{task(0, 0)}}, 0), ProtocolError);
}

TEST(NodeScheduler, AFailedTaskIsRetriedOnAnotherChildWhenThereIsOne) {
  // max_retries: the root reopens a task whose attempt failed in child 1; child 1 asking
  // first gets the next task, child 2 the retried one.
  auto root = make_node(node_config(true, 2, {app("a", 1, 3)}, /*one_port=*/false));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 0)), Strings{"SendTask child 1 0:0"});
  root->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 1);  // failed: the master reopens it
  root->handle(event::TasksReopened{{task(0, 0)}}, 1);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 2)), Strings{"SendTask child 1 0:1"});
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 2)), Strings{"SendTask child 2 0:0"});
  // Failed in child 2 in turn: child 1 is another node.
  root->handle(event::ResultArrived{ChildId{2}, task(0, 0)}, 3);
  root->handle(event::TasksReopened{{task(0, 0)}}, 3);
  root->handle(event::ResultArrived{ChildId{1}, task(0, 1)}, 3);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 2}, 4)),
            (Strings{"SendTask child 1 0:0", "SendTask child 1 0:2"}));
  // 0:2 fails in child 1, which asks again: the task waits for child 2; once child 2 is
  // gone, child 1 takes it (never held back for ever).
  root->handle(event::ResultArrived{ChildId{1}, task(0, 2)}, 5);
  root->handle(event::TasksReopened{{task(0, 2)}}, 5);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 6)), Strings{});
  EXPECT_EQ(names(root->handle(event::ChildLeft{ChildId{2}}, 7)), Strings{"SendTask child 1 0:2"});

  // One child only: the retry goes back to it.
  auto alone = make_node(node_config(true, 2, {app("a", 1, 1)}, /*one_port=*/false));
  alone->start(0);
  alone->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  alone->handle(event::WorkRequested{child(1), 1}, 0);
  alone->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 1);
  alone->handle(event::TasksReopened{{task(0, 0)}}, 1);
  EXPECT_EQ(names(alone->handle(event::WorkRequested{child(1), 1}, 2)), Strings{"SendTask child 1 0:0"});
}

TEST(NodeScheduler, OnePortServesTheExecutorWhileASendIsInProgress) {
  auto node = make_node(node_config(false, 4, {app("a", 1, 10)}, /*one_port=*/true));
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  node->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  node->handle(event::WorkRequested{child(1), 1}, 0);
  node->handle(event::WorkRequested{child(2), 1}, 0);
  node->handle(event::WorkRequested{Target::executor(), 1}, 0);
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 0)}, 1)), (Strings{"SendTask child 1 0:0", "RequestWork x1"}));
  EXPECT_TRUE(node->state().port_busy);
  // Child 2 asked before the executor, but the port is busy: the executor goes first.
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 1)}, 1)), (Strings{"StartTask 0:1", "RequestWork x1"}));
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 2)}, 1)), Strings{});
  EXPECT_EQ(names(node->handle(event::WorkRequested{child(1), 1}, 1)), Strings{});
  // The port frees: the oldest child request (child 2) is served, and only it.
  EXPECT_EQ(names(node->handle(event::SendDone{ChildId{1}}, 2)), (Strings{"SendTask child 2 0:2", "RequestWork x1"}));
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 3)}, 2)), Strings{});
  EXPECT_EQ(names(node->handle(event::SendDone{ChildId{2}}, 3)), (Strings{"SendTask child 1 0:3", "RequestWork x1"}));
}

}  // namespace
}  // namespace treefarm::core::testing
