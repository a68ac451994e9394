// Task deadlines and transfer acknowledgement timeouts in the node driver
// (docs/fault-tolerance.md): a slow child's task is re-issued and its late result dropped
// without dropping it; a child that never acknowledges a transfer is dropped.
#include "runtime/node/NodeDriver.hpp"

#include <gtest/gtest.h>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using namespace testing;  // RecordingTransport.hpp

NodeOptions options(const std::string& name) {
  NodeOptions o = quiet_options(name);
  o.task_deadline_factor = 4;
  o.task_deadline_floor = 10;
  o.one_port_window = 0;  // the one-port held until acknowledged (these tests script the acknowledgements)
  return o;
}

RootSetup root_setup(std::uint64_t tasks, bool one_port, std::vector<net::msg::Result>* results, int* duplicates) {
  RootSetup r;
  r.welcome = welcome(4, one_port, tasks);
  r.apps = {noop_app(tasks)};
  r.tick_interval = 1e9;  // no progress ticks: next_deadline() is the task deadline
  auto shared = std::make_shared<SizeOnly>(task_bytes);
  r.payload = [shared](core::TaskId) { return shared; };
  r.on_result = [results, duplicates](const net::msg::Result& res, bool duplicate, double) {
    if (duplicate)
      ++*duplicates;
    else
      results->push_back(res);
  };
  return r;
}

void join(NodeDriver& d, RecordingTransport& t, PeerId peer, const std::string& name, double now) {
  d.on_child_message(peer, net::msg::Hello{name, 1, 0}, {}, now);
  ASSERT_EQ(t.take<net::msg::Welcome>(peer).size(), 1u) << name << " got no Welcome";
}

net::msg::Result result(std::uint64_t id, const std::string& node) { return net::msg::Result{id, node, 0.1, 0, 1.0, false, ""}; }

TEST(NodeDriverDeadline, SlowChildsTaskIsReissuedAndItsLateResultDroppedWithoutDroppingIt) {
  RecordingTransport t;
  std::vector<net::msg::Result> results;
  int duplicates = 0;
  NodeDriver d(options("root"), t, nullptr, root_setup(2, false, &results, &duplicates));
  d.start(0);
  join(d, t, PeerId{1}, "slow", 0);
  d.on_child_message(PeerId{1}, net::msg::Request{1}, {}, 0);
  auto first = t.take<net::msg::Task>(PeerId{1});
  ASSERT_EQ(first.size(), 1u);
  const std::uint64_t held = first[0].first.task_id;
  d.on_child_message(PeerId{1}, net::msg::Received{{held}}, {}, 0.1);
  join(d, t, PeerId{2}, "fast", 1);
  ASSERT_TRUE(d.next_deadline());
  EXPECT_DOUBLE_EQ(*d.next_deadline(), 10.0) << "the deadline (floor 10 s) is not what wakes the driver";
  d.on_timer(10);
  // The fast child asks: it gets the held task first, then the other one.
  d.on_child_message(PeerId{2}, net::msg::Request{2}, {}, 11);
  auto second = t.take<net::msg::Task>(PeerId{2});
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].first.task_id, held) << "the task held past its deadline was not re-issued first";
  d.on_child_message(PeerId{2}, result(held, "fast"), {}, 12);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].node, "fast");
  // The slow child's result comes after all: a duplicate, and the child is kept.
  d.on_child_message(PeerId{1}, result(held, "slow"), {}, 13);
  EXPECT_EQ(results.size(), 1u);
  EXPECT_EQ(duplicates, 1);
  EXPECT_FALSE(t.dropped.contains(PeerId{1})) << "a slow child was dropped as if hostile";
  EXPECT_TRUE(t.take<net::msg::Shutdown>(PeerId{1}).empty());
  EXPECT_EQ(d.child_count(), 2u);
  d.on_child_message(PeerId{2}, result(second[1].first.task_id, "fast"), {}, 14);
  EXPECT_EQ(results.size(), 2u);
  EXPECT_EQ(d.completed(), 2u);
}

TEST(NodeDriverDeadline, InnerNodeForwardsOneResultPerTask) {
  RecordingTransport t;
  FakeRunner runner(1);
  NodeDriver d(options("mid"), t, &runner, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome(2, false, 10), {}, 0);
  auto task = [](std::uint64_t i) { return core::TaskId::make(core::AppId{0}, i).value; };
  d.on_parent_message(net::msg::Task{task(0)}, std::make_shared<SizeOnly>(task_bytes), 0.1);
  ASSERT_EQ(runner.started.size(), 1u);
  join(d, t, PeerId{5}, "leaf", 0.2);
  d.on_child_message(PeerId{5}, net::msg::Request{1}, {}, 0.2);
  d.on_parent_message(net::msg::Task{task(1)}, std::make_shared<SizeOnly>(task_bytes), 0.3);
  ASSERT_EQ(t.take<net::msg::Task>(PeerId{5}).size(), 1u);
  d.on_child_message(PeerId{5}, net::msg::Received{{task(1)}}, {}, 0.4);
  d.on_timer(20);  // past the leaf's deadline for task 1
  // The executor finishes task 0 and takes the re-issued task 1.
  d.on_job_done(runner.started[0].job, JobOutcome{0.5, 0, 1.0, false, ""}, 21);
  ASSERT_EQ(runner.started.size(), 2u);
  t.take<net::msg::Result>(parent);
  // The leaf's result comes first and goes up; the executor's copy is not sent.
  d.on_child_message(PeerId{5}, result(task(1), "leaf"), {}, 22);
  d.on_job_done(runner.started[1].job, JobOutcome{0.5, 0, 1.0, false, ""}, 23);
  auto up = t.take<net::msg::Result>(parent);
  ASSERT_EQ(up.size(), 1u) << "a task's result went up twice";
  EXPECT_EQ(up[0].first.task_id, task(1));
  EXPECT_EQ(up[0].first.node, "leaf");
  EXPECT_FALSE(t.dropped.contains(PeerId{5}));
}

TEST(NodeDriverDeadline, AChildThatNeverAcknowledgesATransferIsDropped) {
  RecordingTransport t;
  std::vector<net::msg::Result> results;
  int duplicates = 0;
  NodeOptions o = options("root");
  o.heartbeat_interval = 1;
  o.heartbeat_timeout = 3;
  o.ack_timeout = 5;
  NodeDriver d(o, t, nullptr, root_setup(4, /*one_port=*/true, &results, &duplicates));
  d.start(0);
  join(d, t, PeerId{1}, "mute", 0);
  join(d, t, PeerId{2}, "good", 0);
  d.on_child_message(PeerId{1}, net::msg::Request{1}, {}, 0.1);
  ASSERT_EQ(t.take<net::msg::Task>(PeerId{1}).size(), 1u);
  d.on_child_message(PeerId{2}, net::msg::Request{1}, {}, 0.2);
  // "mute" stays alive (heartbeats) but never acknowledges: the one-port is held.
  for (double now = 1; now <= 5; now += 1) {
    d.on_child_message(PeerId{1}, net::msg::Heartbeat{}, {}, now);
    d.on_child_message(PeerId{2}, net::msg::Heartbeat{}, {}, now);
    d.on_timer(now);
  }
  EXPECT_TRUE(t.take<net::msg::Task>(PeerId{2}).empty()) << "one-port: sent before the first transfer ended";
  EXPECT_FALSE(t.dropped.contains(PeerId{1})) << "dropped before the ack timeout";
  d.on_child_message(PeerId{1}, net::msg::Heartbeat{}, {}, 6);
  d.on_child_message(PeerId{2}, net::msg::Heartbeat{}, {}, 6);
  d.on_timer(6);
  EXPECT_TRUE(t.dropped.contains(PeerId{1})) << "a child that never acknowledges kept the port";
  auto told = t.take<net::msg::Shutdown>(PeerId{1});
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].first.reason.find("did not acknowledge"), std::string::npos) << told[0].first.reason;
  EXPECT_EQ(t.take<net::msg::Task>(PeerId{2}).size(), 1u) << "the port stayed busy after the child was dropped";
}

}  // namespace
}  // namespace treefarm::node
