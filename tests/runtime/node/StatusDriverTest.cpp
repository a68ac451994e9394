// `treefarm status` (docs/serve.md): each node's state — cores, busy cores,
// tasks held and not running, the machine's load — rides up the tree on heartbeats; a
// child may report only its own subtree.
#include "runtime/node/NodeDriver.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using testing::parent;
using testing::RecordingTransport;

NodeOptions beating(const std::string& name, double load) {
  NodeOptions o;
  o.name = name;
  o.heartbeat_interval = 1;
  o.heartbeat_timeout = 100;
  o.machine_load = [load] { return load; };
  return o;
}

TEST(StatusDriver, AWorkerReportsItsStateAndItsChildrensOnItsHeartbeat) {
  RecordingTransport t;
  testing::FakeRunner runner(2);
  NodeDriver w(beating("w", 0.75), t, &runner, std::nullopt);
  w.start(0);
  w.on_parent_message(testing::welcome(4), {}, 0.1);
  w.on_child_message(PeerId{1}, net::msg::Hello{"c", 1, 0}, {}, 0.2);
  // Two tasks arrive for the executor (which asked for its two cores): both start.
  w.on_parent_message(net::msg::Task{core::TaskId::make(core::AppId{0}, 0).value}, std::make_shared<SizeOnly>(testing::task_bytes), 0.3);
  w.on_parent_message(net::msg::Task{core::TaskId::make(core::AppId{0}, 1).value}, std::make_shared<SizeOnly>(testing::task_bytes), 0.3);
  ASSERT_EQ(runner.started.size(), 2u);
  net::msg::Heartbeat from_c;
  from_c.loads = {net::msg::NodeLoad{"c", 1, 1, 2, 3.5}};
  w.on_child_message(PeerId{1}, from_c, {}, 0.5);
  t.sent.clear();
  w.on_timer(1.2);
  auto beats = t.take<net::msg::Heartbeat>(parent);
  ASSERT_EQ(beats.size(), 1u);
  const auto& loads = beats[0].first.loads;
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0].name, "w");
  EXPECT_EQ(loads[0].cores, 2u);
  EXPECT_EQ(loads[0].busy_cores, 2u);
  EXPECT_EQ(loads[0].queued, 0u);
  EXPECT_DOUBLE_EQ(loads[0].load1, 0.75);
  EXPECT_EQ(loads[1].name, "c");
  EXPECT_EQ(loads[1].queued, 2u);
  EXPECT_DOUBLE_EQ(loads[1].load1, 3.5);
  EXPECT_FALSE(t.dropped.contains(PeerId{1}));
}

TEST(StatusDriver, AChildReportingANodeOutsideItsSubtreeIsDropped) {
  RecordingTransport t;
  NodeDriver w(beating("w", 0), t, nullptr, std::nullopt);
  w.start(0);
  w.on_parent_message(testing::welcome(4), {}, 0.1);
  w.on_child_message(PeerId{1}, net::msg::Hello{"c", 1, 0}, {}, 0.2);
  w.on_child_message(PeerId{2}, net::msg::Hello{"d", 1, 0}, {}, 0.2);
  net::msg::Heartbeat lie;
  lie.loads = {net::msg::NodeLoad{"c", 1, 0, 0, 0}, net::msg::NodeLoad{"d", 1, 1, 0, 99}};
  w.on_child_message(PeerId{1}, lie, {}, 0.5);
  EXPECT_TRUE(t.dropped.contains(PeerId{1}));
  EXPECT_FALSE(t.dropped.contains(PeerId{2}));
}

TEST(StatusDriver, TheRootHandsEveryStateToItsHook) {
  RecordingTransport t;
  std::map<std::string, net::msg::NodeLoad> seen;
  RootSetup root;
  root.welcome = testing::welcome(2, false, 10);
  root.apps = {testing::noop_app(10)};
  root.payload = [](core::TaskId) -> Payload { return std::make_shared<SizeOnly>(testing::task_bytes); };
  root.on_load = [&](const net::msg::NodeLoad& l) { seen[l.name] = l; };
  NodeDriver m(beating("master", 0.5), t, nullptr, std::move(root));
  m.start(0);
  m.on_child_message(PeerId{1}, net::msg::Hello{"a", 1, 0}, {}, 0.1);
  net::msg::Heartbeat from_a;
  from_a.loads = {net::msg::NodeLoad{"a", 1, 1, 0, 1.5}};
  m.on_child_message(PeerId{1}, from_a, {}, 0.5);
  m.on_timer(1.1);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen.at("master").cores, 0u);
  EXPECT_DOUBLE_EQ(seen.at("master").load1, 0.5);
  EXPECT_EQ(seen.at("a").busy_cores, 1u);
  EXPECT_DOUBLE_EQ(seen.at("a").load1, 1.5);
  EXPECT_TRUE(t.take<net::msg::Heartbeat>(parent).empty()) << "the root has no parent to tell";
}

}  // namespace
}  // namespace treefarm::node
