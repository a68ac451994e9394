// Task migration through the node driver (docs/migration.md): a worker answers its
// parent's Pull with a PullReply and forgets the tasks' inputs; a root pulls from the
// child with the longest queue when another child waits, re-sends the returned task, and
// drops the old holder if it then reports that task.
#include "runtime/node/NodeDriver.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <gtest/gtest.h>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using namespace testing;  // RecordingTransport.hpp

core::TaskId task(std::uint64_t i) { return core::TaskId::make(core::AppId{0}, i); }
Payload bytes() { return std::make_shared<SizeOnly>(task_bytes); }
/// A worker "w" without heartbeats.
NodeOptions worker_options(core::MigrationMode mode = core::MigrationMode::off) {
  NodeOptions o = quiet_options("w");
  o.migration = mode;
  return o;
}

TEST(MigrationDriver, WorkerGivesBackWaitingTasksAndForgetsTheirInputs) {
  RecordingTransport t;
  FakeRunner r(1);
  NodeDriver d(worker_options(), t, &r, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome(4, true, 100), {}, 0.1);
  for (std::uint64_t i = 0; i < 4; ++i) d.on_parent_message(net::msg::Task{task(i).value}, bytes(), 0.2);
  ASSERT_EQ(r.started.size(), 1u);
  t.sent.clear();
  d.on_parent_message(net::msg::Pull{3, 0}, {}, 0.3);
  auto replies = t.take<net::msg::PullReply>(parent);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].first.task_ids, (std::vector<std::uint64_t>{task(2).value, task(3).value}));
  EXPECT_EQ(replies[0].first.bcs, (std::vector<std::uint32_t>{0, 0}));
  EXPECT_EQ(replies[0].first.rejected, 1u);
  EXPECT_FALSE(t.take<net::msg::Request>(parent).empty()) << "the room left is asked for again";
  // Its input is gone with the task: the parent may send it again.
  d.on_parent_message(net::msg::Task{task(3).value}, bytes(), 0.4);
  EXPECT_EQ(t.restarts, 0) << "a returned task sent again was taken for a duplicate";
}

TEST(MigrationDriver, RootPullsForAWaitingChildAndOwnershipMoves) {
  RecordingTransport t;
  std::vector<net::msg::Result> results;
  RootSetup root;
  root.welcome = welcome(3, true, 3);
  root.apps = {noop_app(3)};
  auto shared = bytes();
  root.payload = [shared](core::TaskId) { return shared; };
  root.on_result = [&](const net::msg::Result& res, bool duplicate, double) {
    if (!duplicate) results.push_back(res);
  };
  NodeOptions o = quiet_options("root");
  o.migration = core::MigrationMode::pull;
  o.one_port_window = 0;  // one transfer at a time, each acknowledged below
  NodeDriver d(o, t, nullptr, std::move(root));
  d.start(0);
  for (PeerId p : {PeerId{1}, PeerId{2}}) {
    d.on_child_message(p, net::msg::Hello{p == PeerId{1} ? "a" : "b", 1, 0}, {}, 0);
    ASSERT_EQ(t.take<net::msg::Welcome>(p).size(), 1u);
  }
  d.on_child_message(PeerId{1}, net::msg::Request{3}, {}, 0.1);
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto sent = t.take<net::msg::Task>(PeerId{1});
    ASSERT_EQ(sent.size(), 1u) << "task " << i;
    d.on_child_message(PeerId{1}, net::msg::Received{{sent[0].first.task_id}}, {}, 0.2);
  }
  d.on_child_message(PeerId{2}, net::msg::Request{1}, {}, 0.3);
  auto pulls = t.take<net::msg::Pull>(PeerId{1});
  ASSERT_EQ(pulls.size(), 1u);
  EXPECT_EQ(pulls[0].first.count, 1u);
  d.on_child_message(PeerId{1}, net::msg::PullReply{{task(2).value}, {0}, 0}, {}, 0.4);
  auto moved = t.take<net::msg::Task>(PeerId{2});
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].first.task_id, task(2).value);
  EXPECT_EQ(moved[0].second.get(), shared.get()) << "the input was not the one the root holds";
  // a no longer holds task 2: its result for it drops a.
  net::msg::Result late;
  late.task_id = task(2).value;
  late.node = "a";
  d.on_child_message(PeerId{1}, late, {}, 0.5);
  EXPECT_TRUE(t.dropped.contains(PeerId{1}));
  EXPECT_TRUE(results.empty());
}

}  // namespace
}  // namespace treefarm::node

namespace treefarm::node {
namespace {

using namespace testing;  // RecordingTransport.hpp

/// A root in push mode with children a (peer 1, holding all 3 tasks of the bag, the
/// transfers acknowledged) and b (peer 2, asking for one): a hears of b's idle request.
struct PushRoot {
  RecordingTransport t;
  std::vector<net::msg::Result> results;
  Payload shared = std::make_shared<SizeOnly>(task_bytes);
  std::unique_ptr<NodeDriver> d;

  PushRoot() {
    RootSetup root;
    root.welcome = welcome(3, true, 3);
    root.apps = {noop_app(3)};
    root.payload = [p = shared](core::TaskId) { return p; };
    root.on_result = [this](const net::msg::Result& res, bool duplicate, double) {
      if (!duplicate) results.push_back(res);
    };
    NodeOptions o = quiet_options("root");
    o.migration = core::MigrationMode::push;
    o.one_port_window = 0;
    d = std::make_unique<NodeDriver>(o, t, nullptr, std::move(root));
    d->start(0);
    for (PeerId p : {PeerId{1}, PeerId{2}}) {
      d->on_child_message(p, net::msg::Hello{p == PeerId{1} ? "a" : "b", 1, 0}, {}, 0);
      t.take<net::msg::Welcome>(p);
    }
    d->on_child_message(PeerId{1}, net::msg::Request{3}, {}, 0.1);
    for (std::uint64_t i = 0; i < 3; ++i) {
      auto sent = t.take<net::msg::Task>(PeerId{1});
      if (sent.size() != 1) throw std::logic_error("task not sent");
      d->on_child_message(PeerId{1}, net::msg::Received{{sent[0].first.task_id}}, {}, 0.2);
    }
    d->on_child_message(PeerId{2}, net::msg::Request{1}, {}, 0.3);
  }
};

// PUSH (docs/migration.md): the root tells a of b's idle request; a pushes task 2; the
// root sends it to b with the input it holds, answers a, and records b's result once;
// a's result for the task it gave away drops a.
TEST(MigrationDriver, PushedTaskGoesToTheIdleChildAndItsResultComesBackThroughIt) {
  PushRoot r;
  auto status = r.t.take<net::msg::PushReply>(PeerId{1});
  ASSERT_EQ(status.size(), 1u);
  EXPECT_FALSE(status[0].first.answer);
  EXPECT_EQ(status[0].first.free, 1u);
  EXPECT_EQ(status[0].first.queue, 0u);
  EXPECT_TRUE(r.t.take<net::msg::PushReply>(PeerId{2}).empty()) << "b's own request is not offered to b";
  r.d->on_child_message(PeerId{1}, net::msg::Push{{task(2).value}, {0}}, {}, 0.4);
  auto moved = r.t.take<net::msg::Task>(PeerId{2});
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].first.task_id, task(2).value);
  EXPECT_EQ(moved[0].second.get(), r.shared.get());
  auto answer = r.t.take<net::msg::PushReply>(PeerId{1});
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_TRUE(answer[0].first.answer);
  EXPECT_TRUE(answer[0].first.refused.empty());
  net::msg::Result res;
  res.task_id = task(2).value;
  res.node = "b";
  r.d->on_child_message(PeerId{2}, res, {}, 0.5);
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].node, "b");
  res.node = "a";
  r.d->on_child_message(PeerId{1}, res, {}, 0.6);
  EXPECT_TRUE(r.t.dropped.contains(PeerId{1}));
  EXPECT_EQ(r.results.size(), 1u);
}

// A push that arrives when the parent no longer fits (b, the idle requester, left) is
// refused: the task stays a's (its result from a is recorded), and a is not dropped.
TEST(MigrationDriver, PushToAParentThatNoLongerFitsIsRefusedAndTheTaskStays) {
  PushRoot r;
  r.d->on_child_message(PeerId{2}, net::msg::Bye{}, {}, 0.35);
  r.t.sent.clear();
  r.d->on_child_message(PeerId{1}, net::msg::Push{{task(2).value}, {0}}, {}, 0.4);
  auto answer = r.t.take<net::msg::PushReply>(PeerId{1});
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_TRUE(answer[0].first.answer);
  EXPECT_EQ(answer[0].first.refused, (std::vector<std::uint64_t>{task(2).value}));
  EXPECT_EQ(answer[0].first.free, 0u);
  net::msg::Result res;
  res.task_id = task(2).value;
  res.node = "a";
  r.d->on_child_message(PeerId{1}, res, {}, 0.5);
  EXPECT_FALSE(r.t.dropped.contains(PeerId{1}));
  ASSERT_EQ(r.results.size(), 1u);
  // A push of a task a does not hold (any more) is a protocol error: a is dropped.
  r.d->on_child_message(PeerId{1}, net::msg::Push{{task(2).value}, {0}}, {}, 0.6);
  EXPECT_TRUE(r.t.dropped.contains(PeerId{1}));
}

// The worker's side: told of idle requesters, it pushes from the back of its buffer and
// keeps the inputs until the answer; what the parent took it forgets (the parent may send
// it again, not a duplicate), what it refused it computes itself; never pushed twice.
TEST(MigrationDriver, WorkerPushesWaitingTasksAndKeepsTheRefusedOnes) {
  RecordingTransport t;
  FakeRunner r(1);
  NodeDriver d(worker_options(core::MigrationMode::push), t, &r, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome(5, true, 100), {}, 0.1);
  for (std::uint64_t i = 0; i < 5; ++i) d.on_parent_message(net::msg::Task{task(i).value}, bytes(), 0.2);
  ASSERT_EQ(r.started.size(), 1u);
  t.sent.clear();
  d.on_parent_message(net::msg::PushReply{false, {}, 3, 0, 0}, {}, 0.3);
  auto pushes = t.take<net::msg::Push>(parent);
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].first.task_ids, (std::vector<std::uint64_t>{task(3).value, task(4).value}));
  // The parent took 3 and refused 4.
  d.on_parent_message(net::msg::PushReply{true, {task(4).value}, 0, 0, 0}, {}, 0.4);
  d.on_parent_message(net::msg::Task{task(3).value}, bytes(), 0.5);
  EXPECT_EQ(t.restarts, 0) << "a task the parent took, sent again, was taken for a duplicate";
  // The executor works through the buffer: 1, 2, 4 (refused, kept here) and 3 (sent again).
  for (std::size_t i = 0; i < r.started.size() && i < 8; ++i)
    d.on_job_done(r.started[i].job, JobOutcome{0.1, 0, 1, false, ""}, 0.6 + static_cast<double>(i));
  std::vector<std::uint64_t> done;
  for (const auto& [res, p] : t.take<net::msg::Result>(parent)) done.push_back(res.task_id);
  std::sort(done.begin(), done.end());
  EXPECT_EQ(done, (std::vector<std::uint64_t>{task(0).value, task(1).value, task(2).value,
                                               task(3).value, task(4).value}));
  // An answer with no push in flight is the parent's error: the worker leaves it.
  EXPECT_EQ(t.restarts, 0);
  d.on_parent_message(net::msg::PushReply{true, {}, 0, 0, 0}, {}, 9);
  d.on_timer(20);  // the rejoin starts after its back-off (NodeDriver::parent_lost)
  EXPECT_TRUE(t.restarts > 0 || d.finished()) << "a bogus push answer was accepted";
}

}  // namespace
}  // namespace treefarm::node
