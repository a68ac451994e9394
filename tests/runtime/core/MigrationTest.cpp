// Task migration between nodes, PULL (papers/lee2010 slides 13, 15, 16; docs/migration.md):
// the backfilling counters, a worker answering its parent's pull, a parent taking tasks
// back and giving them to an idle requester, ownership (a returned task's result is no
// longer accepted from its old holder), and whole trees that still record every task
// exactly once while tasks migrate.
#include <cstdio>
#include <map>
#include <variant>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <algorithm>

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

TEST(Migration, ModesParse) {
  EXPECT_EQ(Migration(MigrationMode::push).mode(), MigrationMode::push);
  EXPECT_EQ(migration_from_string("push"), MigrationMode::push);
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

/// A root (migration `mode`, buffer = `tasks`) with children 1 and 2 (one core each) that
/// has sent every task of its bag to child 1.
std::unique_ptr<NodeScheduler> root_with_bag_at_child_one(MigrationMode mode, std::uint32_t tasks) {
  NodeConfig c = node_config(true, tasks, {app("a", 1, tasks)});
  c.migration = mode;
  auto root = make_node(c);
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, ChildInfo{"one", 1, 0}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, ChildInfo{"two", 1, 0}}, 0);
  root->handle(event::WorkRequested{child(1), tasks}, 0);
  for (std::uint32_t i = 0; i < tasks; ++i) root->handle(event::SendDone{ChildId{1}}, 1);
  return root;
}

// Queues that differ by less than 2 tasks are left alone (a task would only move back).
TEST(MigrationParent, NearlyEqualQueuesAreNotPulledFrom) {
  auto root = root_with_bag_at_child_one(MigrationMode::pull, 2);
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

/// 60 tasks of one application under a root that only forwards (buffer 4) to a fast child
/// (1 s per task) and a slow one (8 s), each with a buffer of 8.
TreeSpec fast_and_slow_child(const std::string& policy, MigrationMode mode) {
  TreeSpec spec;
  spec.policy = policy;
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
  return spec;
}

/// With MIGRATION_LOG set in the environment, prints the run's log (to read a failure).
void print_log_if_asked(const TreeHarness& h) {
  if (!std::getenv("MIGRATION_LOG")) return;
  for (const auto& r : h.log())
    std::visit([&](const auto& x) { std::printf("%8.3f n%zu %s\n", r.time, r.node, describe(x).c_str()); }, r.what);
}

// A fast and a slow child under a root that only forwards: at the end of the bag the slow
// child's buffer holds the last tasks. With PULL the root takes them back for the fast one:
// the run ends sooner, and every task is still recorded exactly once.
TEST(MigrationTree, PullAndPushShortenTheTailOfASlowChildAndKeepExactlyOnce) {
  auto run = [](MigrationMode mode, std::size_t* migrated) {
    TreeHarness h(fast_and_slow_child("fcfs", mode));
    h.start();
    h.run();
    EXPECT_TRUE(h.emptiness_check());
    print_log_if_asked(h);
    *migrated = h.migrated();
    return h.now();
  };
  std::size_t moved_off = 0, moved_pull = 0;
  const Seconds without = run(MigrationMode::off, &moved_off);
  const Seconds with = run(MigrationMode::pull, &moved_pull);
  EXPECT_EQ(moved_off, 0u);
  EXPECT_GT(moved_pull, 0u);
  EXPECT_LT(with, 0.8 * without) << "pull " << with << " s, without " << without << " s";
  std::size_t moved_push = 0;
  const Seconds pushed = run(MigrationMode::push, &moved_push);
  EXPECT_GT(moved_push, 0u);
  EXPECT_LT(pushed, 0.8 * without) << "push " << pushed << " s, without " << without << " s";
}

// Random trees (1-30 nodes, random speeds, buffers, links) with PULL (or PUSH) on every
// node: every run completes and records every task exactly once, whatever migrates.
std::size_t random_trees(MigrationMode mode, BalanceMode balance = BalanceMode::off) {
  std::size_t migrated = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    std::mt19937_64 rng(seed);
    auto uniform_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    TreeSpec spec;
    spec.migration = mode;
    spec.balance = balance;
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
    EXPECT_TRUE(h.emptiness_check());
    EXPECT_EQ(h.node(0).duplicates(), 0u);
    if (::testing::Test::HasFailure()) return migrated;
    migrated += h.migrated();
  }
  return migrated;
}

TEST(MigrationTree, RandomTreesWithPullRecordEveryTaskOnce) {
  EXPECT_GT(random_trees(MigrationMode::pull), 100u) << "the random trees should exercise migration";
}

TEST(MigrationTree, RandomTreesWithPushRecordEveryTaskOnce) {
  EXPECT_GT(random_trees(MigrationMode::push), 100u) << "the random trees should exercise migration";
}

// Queue balancing (slide 17) over PULL and over PUSH: the same random trees, exactly once.
TEST(MigrationTree, RandomTreesWithQueueBalancingRecordEveryTaskOnce) {
  for (auto mode : {MigrationMode::pull, MigrationMode::push})
    for (auto balance : {BalanceMode::tll, BalanceMode::mll}) {
      SCOPED_TRACE(std::string(to_string(mode)) + " " + to_string(balance));
      const std::size_t moved = random_trees(mode, balance);
      // TLL moves only towards a larger capacity; the random trees have 1 or 2 cores per node.
      EXPECT_GT(moved, balance == BalanceMode::mll ? 100u : 10u) << "the random trees should exercise balancing";
    }
}

// PUSH (slide 16), the parent's side: it tells a child with a long queue how many of its
// requesters are idle; the child's push is taken up to that, the rest refused; a push of
// a task the child does not hold drops it; a taken task's result from its old holder is
// a protocol error, the new holder's is recorded once.
TEST(MigrationPush, ParentAdvertisesIdleRequestersAndTakesWhatFits) {
  auto root = root_with_bag_at_child_one(MigrationMode::push, 4);
  EXPECT_EQ(root->state().children.at(ChildId{1}).in_flight, 4u);
  // Child 2 asks; the bag is empty: child 1 (queue 3) hears of one idle requester (queue 0).
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 2)), Strings{"SendPushStatus child 1 free 1 queue 0"});
  EXPECT_EQ(root->migration().status_for(root->state(), ChildId{2}), PushStatus{});
  // Nothing changed: no second status.
  EXPECT_EQ(names(root->handle(event::Tick{}, 2)), Strings{});
  EXPECT_THROW(root->handle(event::TasksPushed{ChildId{2}, {task(0, 3)}, {0}}, 3), ProtocolError);  // not its task
  EXPECT_THROW(root->handle(event::TasksPushed{ChildId{1}, {task(0, 3)}, {}}, 3), ProtocolError);
  EXPECT_THROW(root->handle(event::TasksPushed{ChildId{1}, {task(0, 3), task(0, 3)}, {0, 0}}, 3), ProtocolError);
  // Two pushed, one fits: 0:3 goes to child 2, 0:2 is refused and stays with child 1.
  EXPECT_EQ(names(root->handle(event::TasksPushed{ChildId{1}, {task(0, 3), task(0, 2)}, {0, 0}}, 3)),
            (Strings{"AnswerPush child 1 refused 0:2 free 0 queue 0", "SendTask child 2 0:3"}));
  EXPECT_EQ(root->migration().tasks_pushed_in(), 1u);
  EXPECT_EQ(root->state().children.at(ChildId{1}).in_flight, 3u);
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{1}, task(0, 3)}, 4), ProtocolError);
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{2}, task(0, 3)}, 4)), Strings{"TaskCompleted 0:3"});
}

// A task taken from a push goes to the requester it was taken for, not back down to the
// child that pushed it, although that child's request is the oldest (sent back, it could
// never leave again: the visited-once rule). And the push's answer goes before
// any task sent in the same step: a task going back to the pusher (when no other requester
// could take it) must not reach it before it hears that the parent took it, or it takes the
// new copy for a duplicate ("task sent twice": it dropped its parent, and the quickstart's
// tree came apart under --migration push).
TEST(MigrationPush, TheAnswerGoesFirstAndATakenTaskGoesToTheRequesterNotBack) {
  auto root = root_with_bag_at_child_one(MigrationMode::push, 4);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 2)), Strings{});
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 2)), Strings{"SendPushStatus child 1 free 1 queue 0"});
  const Strings out = names(root->handle(event::TasksPushed{ChildId{1}, {task(0, 3)}, {0}}, 3));
  const auto answer = std::find_if(out.begin(), out.end(), [](const std::string& a) { return a.starts_with("AnswerPush child 1"); });
  const auto sent = std::find(out.begin(), out.end(), "SendTask child 2 0:3");
  ASSERT_NE(answer, out.end()) << ::testing::PrintToString(out);
  ASSERT_NE(sent, out.end()) << ::testing::PrintToString(out);
  EXPECT_LT(answer, sent) << ::testing::PrintToString(out);
  EXPECT_EQ(std::find(out.begin(), out.end(), "SendTask child 1 0:3"), out.end()) << ::testing::PrintToString(out);
}

// A pulled task is not given back to the child it came from while another requester waits
// (its request, older, would have taken it: FCFS), and goes back to it only when no one
// else could take it.
TEST(MigrationParent, APulledTaskGoesToTheRequesterNotBackToItsDonor) {
  auto root = root_with_bag_at_child_one(MigrationMode::pull, 4);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 2)), Strings{});
  const Strings pull = names(root->handle(event::WorkRequested{child(2), 1}, 2));
  ASSERT_FALSE(pull.empty());
  EXPECT_TRUE(pull.front().starts_with("SendPull child 1")) << ::testing::PrintToString(pull);
  EXPECT_EQ(names(root->handle(event::TasksReturned{{{task(0, 3)}, {0}, 0}, ChildId{1}}, 3)), Strings{"SendTask child 2 0:3"});
  EXPECT_TRUE(root->state().returned_by.empty());
  EXPECT_FALSE(root->state().constrained);
}

// PUSH, the child's side: it pushes from the back of its buffer when its parent has idle
// requesters with a queue 2 or more shorter, keeps the task it starts next, forgets what
// the parent took (DropTasks), takes back what it refused (the parent no longer fits) and
// then waits for the hold before pushing again; a task is never pushed twice (no loop).
TEST(MigrationPush, ChildPushesFromTheBackAndKeepsWhatIsRefused) {
  NodeConfig c = node_config(false, 6, {app("a", 1, 100)});
  c.migration = MigrationMode::push;
  c.migration_retry = 0.5;
  auto w = make_node(c);
  w->handle(event::WorkRequested{Target::executor(), 1}, 0);
  for (std::uint64_t i = 0; i < 6; ++i) w->handle(event::TaskArrived{task(0, i)}, 1);
  ASSERT_EQ(w->state().buffer.size(), 5u);
  // A status that refuses tasks, or an answer with no push, is the parent's fault.
  EXPECT_THROW(w->handle(event::PushAnswered{false, {task(0, 1)}, {1, 0, 0}}, 1), ProtocolError);
  EXPECT_THROW(w->handle(event::PushAnswered{true, {}, {}}, 1), ProtocolError);
  // Three idle requesters at queue 0: half the difference of 5 is 2.
  EXPECT_EQ(names(w->handle(event::PushAnswered{false, {}, {3, 0, 0}}, 2)), Strings{"PushTasks 0:4 0:5"});
  EXPECT_EQ(w->state().buffer.size(), 3u);
  EXPECT_EQ(w->migration().pushing(), 2u);
  EXPECT_THROW(w->handle(event::PushAnswered{true, {task(0, 1)}, {}}, 2), ProtocolError);  // not pushed
  // The parent took 0:4 and refused 0:5: 0:5 waits here again, 0:4 is forgotten.
  EXPECT_EQ(names(w->handle(event::PushAnswered{true, {task(0, 5)}, {}}, 3)),
            (Strings{"DropTasks 0:4", "RequestWork x1"}));
  EXPECT_EQ(w->state().buffer.back(), task(0, 5));
  EXPECT_EQ(w->migration().tasks_given(), 1u);
  EXPECT_EQ(w->migration().push_refused(), 1u);
  // Everything refused: the parent is held off (0.5 s), then asked again at the Tick.
  EXPECT_EQ(names(w->handle(event::PushAnswered{false, {}, {1, 0, 0}}, 4)), Strings{"PushTasks 0:5"});
  EXPECT_EQ(names(w->handle(event::PushAnswered{true, {task(0, 5)}, {1, 0, 0}}, 4)), Strings{});
  ASSERT_TRUE(w->next_deadline());
  EXPECT_DOUBLE_EQ(*w->next_deadline(), 4.5);
  EXPECT_EQ(names(w->handle(event::Tick{}, 4.5)), Strings{"PushTasks 0:5"});
  // The parent takes it; 0:4 comes back down later and is never pushed again.
  EXPECT_EQ(names(w->handle(event::PushAnswered{true, {}, {}}, 5)), (Strings{"DropTasks 0:5", "RequestWork x1"}));
  w->handle(event::TaskArrived{task(0, 6)}, 6);
  w->handle(event::TaskArrived{task(0, 4)}, 6);  // now at the back: skipped
  EXPECT_EQ(names(w->handle(event::PushAnswered{false, {}, {1, 0, 0}}, 7)), Strings{"PushTasks 0:6"});
  auto root = make_node(node_config(true, 4, {app("a", 1, 4)}));
  EXPECT_THROW(root->handle(event::PushAnswered{false, {}, {1, 0, 0}}, 0), ProtocolError);
}

// Slide 15 with PUSH: a task whose BC is below the parent's NBC is not pushed.
TEST(MigrationPush, TasksBelowTheParentsNbcStay) {
  NodeConfig c = node_config(false, 4, {app("a", 1, 100)});
  c.migration = MigrationMode::push;
  auto w = make_node(c);
  w->handle(event::WorkRequested{Target::executor(), 1}, 0);
  for (std::uint64_t i = 0; i < 4; ++i) w->handle(event::TaskArrived{task(0, i)}, 1);
  EXPECT_EQ(names(w->handle(event::PushAnswered{false, {}, {2, 0, 1}}, 2)), Strings{});
  EXPECT_EQ(w->migration().pushing(), 0u);
  // Only PUSH nodes push: PULL and off nodes ignore the status.
  auto off = make_node(node_config(false, 4, {app("a", 1, 100)}));
  off->handle(event::WorkRequested{Target::executor(), 1}, 0);
  for (std::uint64_t i = 0; i < 4; ++i) off->handle(event::TaskArrived{task(0, i)}, 1);
  EXPECT_EQ(names(off->handle(event::PushAnswered{false, {}, {2, 0, 0}}, 2)), Strings{});
}

}  // namespace
}  // namespace treefarm::core::testing

namespace treefarm::core::testing {
namespace {

// The end of the bag under lp (docs/live-model.md): a fast and a slow child (8x slower)
// under a root that only forwards, migration off. Once the bag is drawn the root takes the
// slow child's waiting tasks back for the fast one, and only then: no pull before the bag
// is empty, every task recorded exactly once, no duplicate, none given back twice, and the
// tail shortens (60 tasks at 1.125 tasks/s: 53 s; the slow child's 8 waiting tasks alone
// are 64 s).
TEST(MigrationTree, AtTheEndOfTheBagTheRootTakesASlowChildsWaitingTasksBack) {
  TreeHarness h(fast_and_slow_child("lp", MigrationMode::off));
  std::size_t early_pulls = 0, pulls = 0;
  std::map<TaskId, int> given_back;
  h.on_step = [&](const TreeHarness& t, const Step& s) {
    for (const Action& a : *s.actions) {
      if (s.node == 0 && std::holds_alternative<action::SendPull>(a)) {
        ++pulls;
        if (t.node(0).state().source_remaining(AppId{0}) > 0) ++early_pulls;
      }
      if (const auto* r = std::get_if<action::ReturnTasks>(&a))
        for (const TaskRef& task : r->tasks) ++given_back[task.id];
    }
  };
  h.start();
  h.run();
  EXPECT_TRUE(h.emptiness_check());
  EXPECT_EQ(h.node(0).duplicates(), 0u);
  EXPECT_EQ(early_pulls, 0u) << "tasks taken back before the bag was drawn";
  EXPECT_GT(pulls, 0u);
  EXPECT_GT(h.migrated(), 0u);
  for (const auto& [id, n] : given_back) EXPECT_EQ(n, 1) << "task " << id.index() << " given back " << n << " times";
  EXPECT_LT(h.now(), 62.0) << "the slow child's queue was not taken back; pulls " << pulls << ", migrated " << h.migrated();
  print_log_if_asked(h);
}

// A steady run of equal children never takes anything back: at the end of the bag each
// child's queue already ends when the others' do.
TEST(MigrationTree, EqualChildrenGiveNothingBackAtTheEndOfTheBag) {
  TreeSpec spec;
  spec.policy = "lp";
  spec.apps = {app("a", 1, 90)};
  NodeSpec root;
  root.cores = 0;
  root.buffer = 4;
  NodeSpec w;
  w.buffer = 8;
  spec.nodes = {root, w, w, w};
  TreeHarness h(spec);
  h.start();
  h.run();
  EXPECT_TRUE(h.emptiness_check());
  EXPECT_EQ(h.migrated(), 0u);
}

}  // namespace
}  // namespace treefarm::core::testing
