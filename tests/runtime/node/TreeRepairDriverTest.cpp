// Tree repair in the node driver (docs/fault-tolerance.md): each node learns its chain of
// ancestors from the Welcome, passes it down, and an orphan tries its parent, then each
// ancestor up to the root, with the back-off between rounds.
#include <gtest/gtest.h>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using namespace testing;  // RecordingTransport.hpp

const std::string key_w1(40, '1'), key_m(40, 'm');

NodeOptions options(const std::string& name) {
  NodeOptions o = quiet_options(name);
  o.parent_endpoint = "tcp://w1:1";
  o.parent_public_key = key_w1;
  return o;
}

/// The Welcome w1 sends: itself as sender, the master above it.
net::msg::Welcome welcome_from_w1() {
  auto w = welcome();
  w.sender = "w1";
  w.ancestors = {{"m", "tcp://m:1", key_m}};
  return w;
}

std::vector<std::string> names(const std::vector<net::msg::Ancestor>& chain) {
  std::vector<std::string> out;
  for (const auto& a : chain) out.push_back(a.name + "@" + a.endpoint);
  return out;
}

TEST(TreeRepairDriver, AWorkerLearnsItsAncestorsAndPassesThemDown) {
  RecordingTransport t;
  NodeDriver d(options("w2"), t, nullptr, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome_from_w1(), {}, 0.1);
  EXPECT_EQ(names(d.ancestors()), (std::vector<std::string>{"w1@tcp://w1:1", "m@tcp://m:1"}));
  EXPECT_EQ(d.ancestors()[0].public_key, key_w1);
  d.on_child_message(PeerId{3}, net::msg::Hello{"w3", 1, 0}, {}, 0.2);
  auto w = t.take<net::msg::Welcome>(PeerId{3});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].first.sender, "w2");
  EXPECT_EQ(names(w[0].first.ancestors), (std::vector<std::string>{"w1@tcp://w1:1", "m@tcp://m:1"}));
  EXPECT_EQ(w[0].first.ancestors[1].public_key, key_m);
}

TEST(TreeRepairDriver, TheRootSaysItsNameAndHasNoAncestors) {
  RecordingTransport t;
  RootSetup r;
  r.welcome = welcome();
  r.apps = {testing::noop_app()};
  r.payload = [](core::TaskId) { return Payload{}; };
  NodeOptions o;
  o.name = "m";
  o.heartbeat_interval = 0;
  NodeDriver d(o, t, nullptr, std::move(r));
  d.start(0);
  d.on_child_message(PeerId{1}, net::msg::Hello{"w1", 1, 0}, {}, 0.1);
  auto w = t.take<net::msg::Welcome>(PeerId{1});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].first.sender, "m");
  EXPECT_TRUE(w[0].first.ancestors.empty());
}

TEST(TreeRepairDriver, AnOrphanTriesItsParentThenEachAncestorAndJoinsTheNearestLiveOne) {
  RecordingTransport t;
  NodeOptions o = options("w2");
  o.rejoin_timeout = 30;
  NodeDriver d(o, t, nullptr, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome_from_w1(), {}, 0.1);
  t.sent.clear();
  d.on_parent_lost("the connection to the parent closed", 10.0);
  // Round 1: the parent after the first back-off (0.5 s), then the master at once.
  ASSERT_EQ(d.next_deadline().value_or(-1), 10.5);
  d.on_timer(10.5);
  ASSERT_EQ(t.targets.size(), 1u);
  EXPECT_EQ(t.targets[0].name, "w1");
  EXPECT_EQ(t.take<net::msg::Hello>(parent).size(), 1u);
  d.on_parent_unreachable("connection refused", 10.51);
  ASSERT_NEAR(d.next_deadline().value_or(-1), 10.61, 1e-9);
  d.on_timer(10.61);
  ASSERT_EQ(t.targets.size(), 2u);
  EXPECT_EQ(t.targets[1].name, "m");
  EXPECT_EQ(t.targets[1].endpoint, "tcp://m:1");
  EXPECT_EQ(t.targets[1].public_key, key_m) << "the orphan must check the announced key";
  // The master does not answer either (join timeout): round 2 starts with the parent again,
  // after the doubled back-off.
  d.on_parent_lost("no Welcome", 15.61);
  ASSERT_EQ(d.next_deadline().value_or(-1), 16.61);
  d.on_timer(16.61);
  EXPECT_EQ(t.targets.back().name, "w1");
  d.on_parent_unreachable("connection refused", 16.62);
  d.on_timer(d.next_deadline().value());
  EXPECT_EQ(t.targets.back().name, "m");
  // The master welcomes it: its ancestors are now the master alone.
  auto w = welcome();
  w.sender = "m";
  d.on_parent_message(w, {}, 16.8);
  EXPECT_FALSE(d.finished());
  EXPECT_EQ(names(d.ancestors()), (std::vector<std::string>{"m@tcp://m:1"}));
  EXPECT_EQ(d.ancestors()[0].public_key, key_m);
}

TEST(TreeRepairDriver, TheRejoinClockCountsFromTheLossAcrossAncestors) {
  RecordingTransport t;
  NodeOptions o = options("w2");
  o.rejoin_timeout = 10;
  NodeDriver d(o, t, nullptr, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome_from_w1(), {}, 0.1);
  d.on_parent_lost("gone", 100.0);
  double now = 100.0;
  while (!d.finished() && now < 200) {
    now = d.next_deadline().value_or(now + 1);
    d.on_timer(now);
    if (!d.finished()) d.on_parent_unreachable("refused", now + 0.01);
  }
  EXPECT_TRUE(d.finished());
  EXPECT_EQ(d.exit_code(), exit_parent_lost);
  EXPECT_GE(now, 110.0);
  EXPECT_LE(now, 120.0);
  std::size_t to_master = 0;
  for (const auto& a : t.targets) to_master += a.name == "m";
  EXPECT_GE(to_master, 2u) << "the master was not tried in every round";
}

TEST(TreeRepairDriver, AnUnreachableParentAtTheFirstJoinWaitsForTheJoinTimeout) {
  RecordingTransport t;
  NodeDriver d(options("w2"), t, nullptr, std::nullopt);
  d.start(0);
  d.on_parent_unreachable("connection refused", 0.1);  // the parent may not be up yet
  EXPECT_EQ(t.restarts, 0);
  EXPECT_EQ(d.next_deadline().value_or(-1), 30.0);
}

TEST(TreeRepairDriver, AChainNamingTheNodeItselfOrTooLongIsCut) {
  RecordingTransport t;
  NodeDriver d(options("w2"), t, nullptr, std::nullopt);
  d.start(0);
  auto w = welcome_from_w1();
  w.ancestors.insert(w.ancestors.begin(), net::msg::Ancestor{"w2", "tcp://loop:1", ""});
  for (int i = 0; i < 40; ++i) w.ancestors.push_back({"a" + std::to_string(i), "tcp://a:1", ""});
  d.on_parent_message(w, {}, 0.1);
  ASSERT_EQ(d.ancestors().size(), net::max_ancestors);
  for (const auto& a : d.ancestors()) EXPECT_NE(a.name, "w2");
  EXPECT_EQ(d.ancestors()[1].name, "m");
}

}  // namespace
}  // namespace treefarm::node
