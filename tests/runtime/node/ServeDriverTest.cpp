// Served trees through the node driver (docs/serve.md): a serving root ends a finished
// run with Shutdown{reset}; a worker told so passes it on, says Bye and ends asking to be
// reset (not to exit); a joining worker told "no run now" waits past its join timeout and
// tells its own waiting children to wait too; an interrupted serving root sends its
// children away for good.
#include "runtime/node/NodeDriver.hpp"

#include <gtest/gtest.h>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using namespace testing;  // RecordingTransport.hpp

NodeDriver serving_root(RecordingTransport& t, std::uint64_t tasks) {
  RootSetup root;
  root.welcome = welcome(2, true, tasks);
  root.apps = {noop_app(tasks)};
  auto input = std::make_shared<SizeOnly>(task_bytes);
  root.payload = [input](core::TaskId) { return input; };
  NodeOptions o = quiet_options("root");
  o.serve = true;
  return NodeDriver(o, t, nullptr, std::move(root));
}

TEST(ServeDriver, AServingRootEndsAFinishedRunWithAReset) {
  RecordingTransport t;
  NodeDriver d = serving_root(t, 1);
  d.start(0);
  d.on_child_message(PeerId{1}, net::msg::Hello{"a", 1, 0}, {}, 0);
  ASSERT_EQ(t.take<net::msg::Welcome>(PeerId{1}).size(), 1u);
  d.on_child_message(PeerId{1}, net::msg::Request{1}, {}, 0.1);
  auto tasks = t.take<net::msg::Task>(PeerId{1});
  ASSERT_EQ(tasks.size(), 1u);
  d.on_child_message(PeerId{1}, net::msg::Received{{tasks[0].first.task_id}}, {}, 0.2);
  net::msg::Result r;
  r.task_id = tasks[0].first.task_id;
  r.node = "a";
  d.on_child_message(PeerId{1}, r, {}, 0.3);
  auto shutdowns = t.take<net::msg::Shutdown>(PeerId{1});
  ASSERT_EQ(shutdowns.size(), 1u);
  EXPECT_TRUE(shutdowns[0].first.reset) << "a served tree's workers must stay";
  EXPECT_TRUE(d.closing_for_reset());
  d.on_child_message(PeerId{1}, net::msg::Bye{}, {}, 0.4);
  EXPECT_TRUE(d.finished());
  EXPECT_EQ(d.exit_code(), exit_ok);
}

TEST(ServeDriver, AnInterruptedServingRootSendsItsChildrenAway) {
  RecordingTransport t;
  NodeDriver d = serving_root(t, 10);
  d.start(0);
  d.on_child_message(PeerId{1}, net::msg::Hello{"a", 1, 0}, {}, 0);
  d.interrupt(0.1, exit_interrupted);
  auto shutdowns = t.take<net::msg::Shutdown>(PeerId{1});
  ASSERT_EQ(shutdowns.size(), 1u);
  EXPECT_FALSE(shutdowns[0].first.reset);
  EXPECT_FALSE(d.reset_requested());
}

TEST(ServeDriver, AWorkerToldToResetPassesItOnSaysByeAndAsksForANewStart) {
  RecordingTransport t;
  FakeRunner runner(1);
  NodeOptions o = quiet_options("w");
  o.shutdown_grace = 5;
  NodeDriver d(o, t, &runner, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome(), {}, 0.1);
  d.on_child_message(PeerId{7}, net::msg::Hello{"c", 1, 0}, {}, 0.2);
  ASSERT_EQ(t.take<net::msg::Welcome>(PeerId{7}).size(), 1u);
  t.sent.clear();
  d.on_parent_message(net::msg::Shutdown{"run complete", true}, {}, 0.3);
  auto down = t.take<net::msg::Shutdown>(PeerId{7});
  ASSERT_EQ(down.size(), 1u);
  EXPECT_TRUE(down[0].first.reset) << "the reset goes down the tree";
  EXPECT_FALSE(d.finished()) << "it waits for its child's Bye";
  d.on_child_message(PeerId{7}, net::msg::Bye{}, {}, 0.4);
  EXPECT_EQ(t.take<net::msg::Bye>(parent).size(), 1u);
  EXPECT_TRUE(d.finished());
  EXPECT_TRUE(d.reset_requested());
  EXPECT_EQ(t.restarts, 0) << "the connections are kept";
}

TEST(ServeDriver, AJoiningWorkerToldNoRunNowWaitsAndMakesItsChildrenWait) {
  RecordingTransport t;
  FakeRunner runner(1);
  NodeOptions o = quiet_options("w");
  o.join_timeout = 5;
  NodeDriver d(o, t, &runner, std::nullopt);
  d.start(0);
  ASSERT_EQ(t.take<net::msg::Hello>(parent).size(), 1u);
  d.on_child_message(PeerId{3}, net::msg::Hello{"early", 1, 0}, {}, 0.5);
  d.on_parent_message(net::msg::Shutdown{"no run now", true}, {}, 1);
  auto told = t.take<net::msg::Shutdown>(PeerId{3});
  ASSERT_EQ(told.size(), 1u);
  EXPECT_TRUE(told[0].first.reset);
  d.on_child_message(PeerId{4}, net::msg::Hello{"late", 1, 0}, {}, 2);
  told = t.take<net::msg::Shutdown>(PeerId{4});
  ASSERT_EQ(told.size(), 1u) << "a child joining now is told to wait too";
  EXPECT_TRUE(told[0].first.reset);
  // Far past the join timeout: still waiting, no rejoin attempt.
  d.on_timer(1000);
  EXPECT_FALSE(d.finished());
  EXPECT_EQ(t.restarts, 0);
  EXPECT_FALSE(d.next_deadline().has_value() && *d.next_deadline() < 1000) << "a join deadline is still armed";
  // The next run starts: the worker and both waiting children join it.
  d.on_parent_message(welcome(), {}, 1001);
  EXPECT_EQ(t.take<net::msg::Welcome>(PeerId{3}).size(), 1u);
  EXPECT_EQ(t.take<net::msg::Welcome>(PeerId{4}).size(), 1u);
  EXPECT_FALSE(t.take<net::msg::Request>(parent).empty());
}

// A cancelled run on a served tree: the parent may send tasks (and other run messages)
// after its reset and before it sees the worker's new Hello. The worker's next driver
// ignores them while it joins, then joins the next run; a first join that gets a Task
// instead of a Welcome still takes it for a broken parent.
TEST(ServeDriver, AWorkerAfterAResetIgnoresTheLastRunsTailWhileItJoins) {
  for (const bool after_reset : {true, false}) {
    RecordingTransport t;
    FakeRunner runner(1);
    NodeOptions o = quiet_options("w");
    o.after_reset = after_reset;
    NodeDriver d(o, t, &runner, std::nullopt);
    d.start(0);
    ASSERT_EQ(t.take<net::msg::Hello>(parent).size(), 1u);
    d.on_parent_message(net::msg::Task{7}, std::make_shared<SizeOnly>(task_bytes), 0.1);
    d.on_parent_message(net::msg::Probe{1}, {}, 0.1);
    d.on_timer(10);  // a rejoin attempt, if the parent was taken for lost, is due by now
    if (!after_reset) {
      EXPECT_GT(t.restarts, 0) << "a first join that gets a Task must take the parent for broken";
      continue;
    }
    EXPECT_FALSE(d.finished());
    EXPECT_EQ(t.restarts, 0) << "the parent was taken for lost";
    d.on_parent_message(net::msg::Shutdown{"no run now", true}, {}, 0.2);
    d.on_parent_message(welcome(), {}, 1);
    EXPECT_FALSE(t.take<net::msg::Request>(parent).empty()) << "it did not join the next run";
  }
}

// The Hellos of the next run are kept in one place, the driver: while a run closes for a
// reset, and between runs (a driver that only keeps them), until the next run's driver
// adopts them and welcomes each.
TEST(ServeDriver, HellosForTheNextRunAreKeptByTheDriverAndAdoptedByTheNext) {
  RecordingTransport t;
  NodeDriver d = serving_root(t, 1);
  d.start(0);
  d.on_child_message(PeerId{1}, net::msg::Hello{"a", 1, 0}, {}, 0);
  ASSERT_EQ(t.take<net::msg::Welcome>(PeerId{1}).size(), 1u);
  d.on_child_message(PeerId{1}, net::msg::Request{1}, {}, 0.1);
  auto tasks = t.take<net::msg::Task>(PeerId{1});
  ASSERT_EQ(tasks.size(), 1u);
  net::msg::Result r;
  r.task_id = tasks[0].first.task_id;
  r.node = "a";
  d.on_child_message(PeerId{1}, r, {}, 0.2);
  ASSERT_TRUE(d.closing_for_reset());
  t.sent.clear();
  // A newcomer while the run closes: told to wait, kept.
  d.on_child_message(PeerId{2}, net::msg::Hello{"b", 1, 0}, {}, 0.3);
  auto told = t.take<net::msg::Shutdown>(PeerId{2});
  ASSERT_EQ(told.size(), 1u);
  EXPECT_TRUE(told[0].first.reset);
  EXPECT_TRUE(t.take<net::msg::Welcome>(PeerId{2}).empty()) << "welcomed into a run that is over";
  d.on_child_message(PeerId{1}, net::msg::Bye{}, {}, 0.4);
  ASSERT_TRUE(d.finished());

  // Between runs: a driver that keeps Hellos (the one kept so far, and a new one).
  NodeOptions o;
  o.name = "root";
  NodeDriver between(o, t, d.take_waiting());
  EXPECT_TRUE(between.finished());
  t.dropped.clear();
  between.on_child_message(PeerId{1}, net::msg::Hello{"a", 1, 0}, {}, 1);
  between.on_child_message(PeerId{1}, net::msg::Heartbeat{}, {}, 1.1);
  EXPECT_FALSE(t.dropped.contains(PeerId{1})) << "a waiting child's heartbeat dropped it";
  ASSERT_EQ(between.waiting().size(), 2u);
  EXPECT_EQ(between.waiting()[0].hello.name, "b");
  EXPECT_EQ(between.waiting()[1].hello.name, "a");
  between.on_child_failed(PeerId{2}, "gone", 1.2);
  ASSERT_EQ(between.waiting().size(), 1u) << "a waiting peer that failed is still kept";

  // The next run adopts them: each is welcomed.
  t.sent.clear();
  NodeDriver next = serving_root(t, 1);
  next.start(2);
  next.adopt(between.take_waiting(), 2);
  EXPECT_EQ(t.take<net::msg::Welcome>(PeerId{1}).size(), 1u);
  EXPECT_TRUE(between.waiting().empty());
}

}  // namespace
}  // namespace treefarm::node
