// Task migration between nodes, PULL (papers/lee2010 slides 13, 15, 16; docs/migration.md):
// the backfilling counters, a worker answering its parent's pull, a parent taking tasks
// back and giving them to an idle requester, ownership (a returned task's result is no
// longer accepted from its old holder), and whole trees that still record every task
// exactly once while tasks migrate.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "runtime/core/Migration.hpp"
#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

TEST(Migration, BypassedTasksCountAndNbcIsTheMaximum) {
  Migration m(MigrationMode::pull);
  std::deque<TaskRef> buffer{task(0, 0), task(0, 1), task(0, 2), task(0, 3)};
  m.on_assign(buffer, 2);  // 0:2 bypasses 0:0 and 0:1
  buffer.erase(buffer.begin() + 2);
  m.on_assign(buffer, 1);  // 0:1 bypasses 0:0
  buffer.erase(buffer.begin() + 1);
  EXPECT_EQ(m.bc(task(0, 0).id), 2u);
  EXPECT_EQ(m.bc(task(0, 1).id), 0u);  // forgotten once assigned
  EXPECT_EQ(m.bc(task(0, 3).id), 0u);
  EXPECT_EQ(m.nbc(buffer), 2u);
  EXPECT_EQ(m.nbc({}), 0u);
}

TEST(Migration, PushIsRejectedUntilItExists) {
  EXPECT_THROW(Migration(MigrationMode::push), std::invalid_argument);
  EXPECT_EQ(migration_from_string("pull"), MigrationMode::pull);
  EXPECT_FALSE(migration_from_string("PULL"));
}

// A worker with a full buffer: its parent pulls; it gives back from the back of its buffer,
// keeps the task it starts next, rejects what it cannot give, and never gives a task twice.
TEST(MigrationWorker, GivesBackWaitingTasksFromTheBackAndRejectsTheRest) {
  auto w = make_node(node_config(false, 4, {app("a", 1, 100)}));
  EXPECT_EQ(names(w->handle(event::WorkRequested{Target::executor(), 1}, 0)), Strings{"RequestWork x4"});
  w->handle(event::TaskArrived{task(0, 0)}, 1);  // started at once
  w->handle(event::TaskArrived{task(0, 1)}, 1);
  w->handle(event::TaskArrived{task(0, 2)}, 1);
  w->handle(event::TaskArrived{task(0, 3)}, 1);
  ASSERT_EQ(w->state().buffer.size(), 3u);
  EXPECT_EQ(names(w->handle(event::PullRequested{5, 0}, 2)),
            (Strings{"ReturnTasks 0:2 0:3 rejected 3", "RequestWork x2"}));
  ASSERT_EQ(w->state().buffer.size(), 1u);
  EXPECT_EQ(w->state().buffer.front(), task(0, 1));
  EXPECT_EQ(w->migration().tasks_given(), 2u);
  // The parent sends 0:3 back down; it is never given back a second time (no loop).
  w->handle(event::TaskArrived{task(0, 3)}, 3);
  w->handle(event::TaskArrived{task(0, 4)}, 3);
  EXPECT_EQ(names(w->handle(event::PullRequested{2, 0}, 4)),
            (Strings{"ReturnTasks 0:4 rejected 1", "RequestWork x1"}));
}

// Slide 15: only tasks whose BC is at least the target's NBC migrate.
TEST(MigrationWorker, TasksBelowTheTargetsNbcStay) {
  auto w = make_node(node_config(false, 4, {app("a", 1, 100)}));
  w->handle(event::WorkRequested{Target::executor(), 1}, 0);
  for (std::uint64_t i = 0; i < 4; ++i) w->handle(event::TaskArrived{task(0, i)}, 1);
  EXPECT_EQ(names(w->handle(event::PullRequested{2, 1}, 2)), Strings{"ReturnTasks rejected 2"});
  EXPECT_EQ(w->state().buffer.size(), 3u);
  EXPECT_THROW(w->handle(event::PullRequested{0, 0}, 2), ProtocolError);
  auto root = make_node(node_config(true, 4, {app("a", 1, 4)}));
  EXPECT_THROW(root->handle(event::PullRequested{1, 0}, 0), ProtocolError);
}

// The root's bag is empty and child 2 asks: the root pulls from child 1 (the longest queue),
// takes the returned task back and sends it to child 2. Child 1's result for it is then a
// protocol error (it no longer holds it); child 2's is recorded once.
TEST(MigrationParent, PullsFromTheLongestQueueAndOwnershipMovesWithTheTask) {
  NodeConfig c = node_config(true, 3, {app("a", 1, 3)});
  c.migration = MigrationMode::pull;
  auto root = make_node(c);
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, ChildInfo{"one", 1, 0}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, ChildInfo{"two", 1, 0}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 3}, 0)), Strings{"SendTask child 1 0:0"});
  EXPECT_EQ(names(root->handle(event::SendDone{ChildId{1}}, 1)), Strings{"SendTask child 1 0:1"});
  EXPECT_EQ(names(root->handle(event::SendDone{ChildId{1}}, 2)), Strings{"SendTask child 1 0:2"});
  root->handle(event::SendDone{ChildId{1}}, 3);
  // Unsolicited answers are refused.
  EXPECT_THROW(root->handle(event::TasksReturned{{{task(0, 2)}, {0}, 0}, ChildId{1}}, 3), ProtocolError);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 4)), Strings{"SendPull child 1 x1 nbc 0"});
  EXPECT_EQ(root->migration().outstanding(ChildId{1}), 1u);
  // A task it does not hold, or a mismatched counter list, drops the child.
  EXPECT_THROW(root->handle(event::TasksReturned{{{task(0, 2)}, {0}, 0}, ChildId{2}}, 5), ProtocolError);
  EXPECT_THROW(root->handle(event::TasksReturned{{{task(0, 2)}, {}, 0}, ChildId{1}}, 5), ProtocolError);
  EXPECT_EQ(names(root->handle(event::TasksReturned{{{task(0, 2)}, {0}, 0}, ChildId{1}}, 5)),
            Strings{"SendTask child 2 0:2"});
  EXPECT_EQ(root->migration().tasks_pulled(), 1u);
  EXPECT_EQ(root->state().children.at(ChildId{1}).in_flight, 2u);
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{1}, task(0, 2)}, 6), ProtocolError);
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{2}, task(0, 2)}, 6)), Strings{"TaskCompleted 0:2"});
  EXPECT_EQ(root->completed(), 1u);
}

// Queues that differ by less than 2 tasks are left alone (a task would only move back).
TEST(MigrationParent, NearlyEqualQueuesAreNotPulledFrom) {
  NodeConfig c = node_config(true, 2, {app("a", 1, 2)});
  c.migration = MigrationMode::pull;
  auto root = make_node(c);
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, ChildInfo{"one", 1, 0}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, ChildInfo{"two", 1, 0}}, 0);
  root->handle(event::WorkRequested{child(1), 2}, 0);
  root->handle(event::SendDone{ChildId{1}}, 1);
  root->handle(event::SendDone{ChildId{1}}, 2);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 3)), Strings{});
  EXPECT_EQ(root->migration().pulls_sent(), 0u);
}

// A child that rejects is not asked again before the hold expires: the core asks for a
// Tick then, and the next pull goes out at it.
TEST(MigrationParent, ARejectingChildIsAskedAgainAfterTheHold) {
  NodeConfig c = node_config(true, 3, {app("a", 1, 3)});
  c.migration = MigrationMode::pull;
  c.migration_retry = 0.5;
  auto root = make_node(c);
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, ChildInfo{"one", 1, 0}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, ChildInfo{"two", 1, 0}}, 0);
  root->handle(event::WorkRequested{child(1), 3}, 0);
  root->handle(event::SendDone{ChildId{1}}, 1);
  root->handle(event::SendDone{ChildId{1}}, 2);
  root->handle(event::SendDone{ChildId{1}}, 2);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 3)), Strings{"SendPull child 1 x1 nbc 0"});
  EXPECT_EQ(names(root->handle(event::TasksReturned{{{}, {}, 1}, ChildId{1}}, 3)), Strings{});
  ASSERT_TRUE(root->next_deadline());
  EXPECT_DOUBLE_EQ(*root->next_deadline(), 3.5);
  EXPECT_EQ(names(root->handle(event::Tick{}, 3.2)), Strings{});
  EXPECT_EQ(names(root->handle(event::Tick{}, 3.5)), Strings{"SendPull child 1 x1 nbc 0"});
  EXPECT_EQ(root->migration().rejects(), 1u);
}

// A fast and a slow child under a root that only forwards: at the end of the bag the slow
// child's buffer holds the last tasks. With PULL the root takes them back for the fast one:
// the run ends sooner, and every task is still recorded exactly once.
TEST(MigrationTree, PullShortensTheTailOfASlowChildAndKeepsExactlyOnce) {
  auto run = [](MigrationMode mode, std::size_t* migrated) {
    TreeSpec spec;
    spec.apps = {app("a", 1, 60)};
    spec.migration = mode;
    NodeSpec root;
    root.cores = 0;
    root.buffer = 4;
    NodeSpec fast;
    fast.buffer = 8;
    fast.task_seconds = {1.0};
    NodeSpec slow = fast;
    slow.task_seconds = {8.0};
    spec.nodes = {root, fast, slow};
    TreeHarness h(spec);
    h.start();
    h.run();
    EXPECT_TRUE(h.emptiness_check());
    if (std::getenv("MIGRATION_LOG"))
      for (const auto& r : h.log())
        std::visit([&](const auto& x) { std::printf("%8.3f n%zu %s\n", r.time, r.node, describe(x).c_str()); }, r.what);
    *migrated = h.migrated();
    return h.now();
  };
  std::size_t moved_off = 0, moved_pull = 0;
  const Seconds without = run(MigrationMode::off, &moved_off);
  const Seconds with = run(MigrationMode::pull, &moved_pull);
  EXPECT_EQ(moved_off, 0u);
  EXPECT_GT(moved_pull, 0u);
  EXPECT_LT(with, 0.8 * without) << "pull " << with << " s, without " << without << " s";
}

// Random trees (1-30 nodes, random speeds, buffers, links) with PULL on every node: every
// run completes and records every task exactly once, whatever migrates.
TEST(MigrationTree, RandomTreesWithPullRecordEveryTaskOnce) {
  std::size_t migrated = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    std::mt19937_64 rng(seed);
    auto uniform_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    TreeSpec spec;
    spec.migration = MigrationMode::pull;
    spec.policy = seed % 3 == 0 ? "cgbc" : "fcfs";
    spec.one_port = uniform_int(0, 3) != 0;
    const int apps = uniform_int(1, 3);
    for (int k = 0; k < apps; ++k)
      spec.apps.push_back(app("app" + std::to_string(k), uniform(0.5, 3.0), static_cast<std::uint64_t>(uniform_int(1, 80))));
    const int n = uniform_int(2, 25);
    for (int v = 0; v < n; ++v) {
      NodeSpec node;
      if (v > 0) node.parent = static_cast<std::size_t>(uniform_int(0, v - 1));
      node.cores = static_cast<std::uint32_t>(uniform_int(v == 0 ? 0 : 1, 2));
      node.buffer = static_cast<std::uint32_t>(uniform_int(1, 10));
      node.task_seconds.clear();
      for (int k = 0; k < apps; ++k) node.task_seconds.push_back(uniform(0.05, 8.0));
      node.link_seconds = uniform(0.001, 0.5);
      node.latency_seconds = uniform(0.0, 0.1);
      spec.nodes.push_back(node);
    }
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(n) + " nodes, policy " + spec.policy);
    TreeHarness h(spec);
    h.start();
    h.run();
    ASSERT_TRUE(h.emptiness_check());
    EXPECT_EQ(h.node(0).duplicates(), 0u);
    migrated += h.migrated();
  }
  EXPECT_GT(migrated, 100u) << "the random trees should exercise migration";
}

}  // namespace
}  // namespace treefarm::core::testing
