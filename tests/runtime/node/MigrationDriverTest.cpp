// Task migration through the node driver (docs/migration.md): a worker answers its
// parent's Pull with a PullReply and forgets the tasks' inputs; a root pulls from the
// child with the longest queue when another child waits, re-sends the returned task, and
// drops the old holder if it then reports that task.
#include "runtime/node/NodeDriver.hpp"

#include <gtest/gtest.h>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using namespace testing;  // RecordingTransport.hpp

core::TaskId task(std::uint64_t i) { return core::TaskId::make(core::AppId{0}, i); }
Payload bytes() { return std::make_shared<SizeOnly>(task_bytes); }

TEST(MigrationDriver, WorkerGivesBackWaitingTasksAndForgetsTheirInputs) {
  RecordingTransport t;
  FakeRunner r(1);
  NodeOptions o;
  o.name = "w";
  o.heartbeat_interval = 0;
  NodeDriver d(o, t, &r, std::nullopt);
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
  NodeOptions o;
  o.name = "root";
  o.heartbeat_interval = 0;
  o.migration = core::MigrationMode::pull;
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
