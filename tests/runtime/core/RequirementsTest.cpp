// Multi-resource requirements and queue balancing in the tree (papers/lee2010 slides 17,
// 19-20; docs/migration.md, "Requirements" and "Queue balancing"): a task goes only where
// it fits, a node reports what its subtree can run, the root draws for a requester that
// nothing buffered fits, and TLL/MLL decide how many waiting tasks move.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "runtime/core/MigrationOptions.hpp"
#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

AppParams needing(std::string name, std::uint64_t tasks, std::uint64_t memory) {
  AppParams a = app(std::move(name), 1, tasks);
  a.memory_per_task = memory;
  return a;
}

TEST(Requirements, EachIsMetOrDontCare) {
  AppParams a = app("a", 1, 1);
  EXPECT_TRUE(fits(a, 1, 0, 0, 0));
  a.cores_per_task = 2;
  EXPECT_FALSE(fits(a, 1, 0, 0, 0));
  EXPECT_TRUE(fits(a, 2, 0, 0, 0));
  EXPECT_TRUE(fits(a, 0, 0, 0, 0));  // cores unknown
  a.memory_per_task = 2 * GiB;
  EXPECT_FALSE(fits(a, 4, GiB, 0, 0));
  EXPECT_TRUE(fits(a, 4, 2 * GiB, 0, 0));
  EXPECT_TRUE(fits(a, 4, 0, 0, 0));  // memory unknown: taken as enough
  a.disk_per_task = 10 * GiB;
  EXPECT_FALSE(fits(a, 4, 0, 9 * GiB, 0));
  a.min_speed = 2e9;
  EXPECT_FALSE(fits(a, 4, 0, 0, 1e9));
  EXPECT_TRUE(fits(a, 4, 0, 0, 3e9));
  EXPECT_TRUE(a.constrained());
  EXPECT_FALSE(app("b", 1, 1).constrained());
}

// A worker with 1 GiB under a root: it reports (before its first request) that it runs
// "small" but not "big"; the root then gives it only "small" tasks, the oldest that fits,
// and runs "big" itself.
TEST(Requirements, AWorkerReportsWhatItRunsAndGetsOnlyThat) {
  const std::vector<AppParams> apps{needing("big", 4, 2 * GiB), needing("small", 4, GiB / 2)};
  NodeConfig wc = node_config(false, 2, apps);
  wc.cores = 1;
  wc.memory = GiB;
  auto w = make_node(wc);
  EXPECT_EQ(w->state().local_fits, (std::vector<bool>{false, true}));
  EXPECT_TRUE(w->state().constrained);
  EXPECT_EQ(names(w->start(0)), Strings{"ReportCapacity fits 0 1 cores 1"});
  EXPECT_EQ(names(w->handle(event::WorkRequested{Target::executor(), 1}, 0)), Strings{"RequestWork x2"});

  NodeConfig rc = node_config(true, 4, apps);
  rc.cores = 1;
  rc.memory = 8 * GiB;
  auto root = make_node(rc);
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, ChildInfo{"w", 1, 0}}, 0);
  root->handle(event::CapacityReported{ChildId{1}, SubtreeCapacity{{false, true}, 1, GiB, 0}}, 0);
  EXPECT_TRUE(root->state().constrained);
  EXPECT_FALSE(root->state().fits(child(1), AppId{0}));
  const auto sent = names(root->handle(event::WorkRequested{child(1), 2}, 1));
  for (const auto& s : sent) EXPECT_EQ(s.find("0:"), std::string::npos) << s << ": a 'big' task sent to a 1 GiB worker";
  EXPECT_EQ(root->state().children.at(ChildId{1}).in_flight, 1u);  // one-port: one send at a time
  const auto local = names(root->handle(event::WorkRequested{Target::executor(), 1}, 1));
  ASSERT_FALSE(local.empty());
  EXPECT_EQ(local.front(), "StartTask 0:0");
  // A report for another number of applications, or from no child, is refused.
  EXPECT_THROW(root->handle(event::CapacityReported{ChildId{1}, SubtreeCapacity{{true}, 1, 0, 0}}, 2), ProtocolError);
  EXPECT_THROW(root->handle(event::CapacityReported{ChildId{7}, SubtreeCapacity{{true, true}, 1, 0, 0}}, 2), ProtocolError);
}

// A node reports again when its subtree changes: a child that runs "big" joins, and leaves.
TEST(Requirements, AnInnerNodeReportsItsSubtreeAsItChanges) {
  const std::vector<AppParams> apps{needing("big", 4, 2 * GiB), needing("small", 4, GiB / 2)};
  NodeConfig c = node_config(false, 2, apps);
  c.cores = 2;
  c.memory = GiB;
  auto w = make_node(c);
  EXPECT_EQ(names(w->start(0)), Strings{"ReportCapacity fits 0 1 cores 2"});
  EXPECT_EQ(names(w->handle(event::ChildJoined{ChildId{1}, ChildInfo{"c", 4, 0}}, 1)),
            Strings{});  // not reported yet: it counts for nothing until it does
  EXPECT_EQ(names(w->handle(event::CapacityReported{ChildId{1}, SubtreeCapacity{{true, false}, 4, 4 * GiB, 0}}, 1)),
            Strings{"ReportCapacity fits 1 1 cores 6"});
  EXPECT_EQ(names(w->handle(event::ChildLeft{ChildId{1}}, 2)), Strings{"ReportCapacity fits 0 1 cores 2"});
}

// The root's buffer holds only tasks the waiting requester cannot run: it draws, beyond B,
// a task of an application that requester fits, instead of leaving it idle.
TEST(Requirements, TheRootDrawsForARequesterNothingBufferedFits) {
  const std::vector<AppParams> apps{needing("big", 10, 2 * GiB), needing("small", 10, GiB / 2)};
  NodeConfig rc = node_config(true, 1, apps);
  rc.cores = 0;
  auto root = make_node(rc);
  root->start(0);
  ASSERT_EQ(root->state().buffer.size(), 1u);
  EXPECT_EQ(root->state().buffer.front(), task(0, 0));  // the weights' mix starts with "big"
  root->handle(event::ChildJoined{ChildId{1}, ChildInfo{"w", 1, 0}}, 0);
  root->handle(event::CapacityReported{ChildId{1}, SubtreeCapacity{{false, true}, 1, GiB, 0}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 1)), Strings{"SendTask child 1 1:0"});
  EXPECT_EQ(root->state().buffer.size(), 1u);  // "big" still waits for a node that fits it
}

// Random trees, every policy: one application needs more memory than most nodes have; each
// task runs only where it fits (the harness checks every StartTask) and every task is
// recorded exactly once.
TEST(Requirements, RandomTreesRunEachTaskWhereItFitsExactlyOnce) {
  for (const std::string policy : {"fcfs", "cgbc", "pbc", "lp", "data-centric", "price"}) {
    for (std::uint64_t seed = 1; seed <= 30; ++seed) {
      std::mt19937_64 rng(seed);
      auto uniform_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
      auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
      TreeSpec spec;
      spec.policy = policy;
      spec.apps = {needing("big", static_cast<std::uint64_t>(uniform_int(1, 40)), 4 * GiB),
                   needing("small", static_cast<std::uint64_t>(uniform_int(1, 40)), GiB / 4)};
      spec.apps[1].weight = uniform(0.5, 2.0);
      const int n = uniform_int(2, 15);
      for (int v = 0; v < n; ++v) {
        NodeSpec node;
        if (v > 0) node.parent = static_cast<std::size_t>(uniform_int(0, v - 1));
        node.cores = static_cast<std::uint32_t>(uniform_int(v == 0 ? 0 : 1, 2));
        node.buffer = static_cast<std::uint32_t>(uniform_int(1, 6));
        node.task_seconds = {uniform(0.1, 3.0), uniform(0.1, 3.0)};
        node.link_seconds = uniform(0.001, 0.2);
        // Node 1 always has enough for "big"; the others one time in four.
        node.memory = (v == 1 || uniform_int(0, 3) == 0) ? 8 * GiB : GiB;
        spec.nodes.push_back(node);
      }
      SCOPED_TRACE(policy + ", seed " + std::to_string(seed) + ", " + std::to_string(n) + " nodes");
      TreeHarness h(spec);
      h.start();
      h.run();
      EXPECT_TRUE(h.emptiness_check());
      EXPECT_EQ(h.node(0).duplicates(), 0u);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// Queue balancing (slide 17): a 1-core child holds 6 tasks, a 4-core child asks. MLL moves
// until the larger normalised load is least (5 tasks: 1/1 against 5/4); TLL moves as long
// as each task costs less there (1/4) than here (1).
TEST(Balance, MllEvensNormalisedLoadsTllMovesToTheLargerCapacity) {
  NodeState s;
  s.config.buffer = 10;
  s.config.apps = {app("a", 1, 100)};
  ChildState slow;
  slow.info = ChildInfo{"slow", 1, 0};
  slow.in_flight = 6;
  slow.held = Demand{6, 0, 0};
  ChildState big;
  big.info = ChildInfo{"big", 4, 0};
  s.children.emplace(ChildId{1}, slow);
  s.children.emplace(ChildId{2}, big);
  EXPECT_DOUBLE_EQ(Migration::load(s, child(1)), 6.0);
  EXPECT_DOUBLE_EQ(Migration::load(s, child(2), Demand{2, 0, 0}), 0.5);
  const Migration mll(MigrationMode::pull, 0.5, BalanceMode::mll);
  const Migration tll(MigrationMode::pull, 0.5, BalanceMode::tll);
  EXPECT_EQ(mll.balanced_count(s, ChildId{1}, child(2), 10), 5u);
  EXPECT_EQ(tll.balanced_count(s, ChildId{1}, child(2), 10), 6u);  // all it holds: none can go below 0
  EXPECT_EQ(tll.balanced_count(s, ChildId{1}, child(2), 3), 3u);
  // Between equal capacities TLL moves nothing (the sum does not change), MLL evens them.
  s.children.at(ChildId{2}).info.cores = 1;
  EXPECT_EQ(tll.balanced_count(s, ChildId{1}, child(2), 10), 0u);
  EXPECT_EQ(mll.balanced_count(s, ChildId{1}, child(2), 10), 3u);  // 6,0 -> 3,3
  // A reported capacity counts memory too: 6 tasks of 1 GiB on a 2 GiB subtree load it 3.
  s.config.apps[0].memory_per_task = GiB;
  s.children.at(ChildId{1}).held = Demand{6, 6.0 * GiB, 0};
  s.children.at(ChildId{1}).capacity = SubtreeCapacity{{true}, 8, 2 * GiB, 0};
  EXPECT_DOUBLE_EQ(Migration::load(s, child(1)), 3.0);
}

TEST(Balance, CommandLineOptionsParseAndNeedMigration) {
  MigrationMode m = MigrationMode::off;
  BalanceMode b = BalanceMode::off;
  apply_migration_options(m, b, "", "");
  EXPECT_EQ(m, MigrationMode::off);
  EXPECT_THROW(apply_migration_options(m, b, "", "tll"), std::invalid_argument);  // no migration
  EXPECT_THROW(apply_migration_options(m, b, "sideways", ""), std::invalid_argument);
  apply_migration_options(m, b, "push", "mll");
  EXPECT_EQ(m, MigrationMode::push);
  EXPECT_EQ(b, BalanceMode::mll);
  EXPECT_THROW(apply_migration_options(m, b, "off", ""), std::invalid_argument);  // mll kept, migration off
  try {
    MigrationMode m2 = MigrationMode::off;
    BalanceMode b2 = BalanceMode::off;
    apply_migration_options(m2, b2, "", "most");
    FAIL() << "accepted --balance most";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--balance"), std::string::npos) << e.what();
  }
}

TEST(Balance, ModesParseAndNeedMigration) {
  EXPECT_EQ(balance_from_string("tll"), BalanceMode::tll);
  EXPECT_EQ(balance_from_string("mll"), BalanceMode::mll);
  EXPECT_EQ(balance_from_string("off"), BalanceMode::off);
  EXPECT_FALSE(balance_from_string("TLL"));
  EXPECT_STREQ(to_string(BalanceMode::mll), "mll");
  EXPECT_THROW(Migration(MigrationMode::off, 0.5, BalanceMode::tll), std::invalid_argument);
  NodeConfig c = node_config(true, 4, {app("a", 1, 4)});
  c.balance = BalanceMode::mll;
  EXPECT_THROW(make_node(c), std::invalid_argument);
  c.migration = MigrationMode::push;
  EXPECT_NO_THROW(make_node(c));
}

}  // namespace
}  // namespace treefarm::core::testing

namespace treefarm::core::testing {
namespace {

// Task deadlines meet migration: a task back in a parent's buffer (given back
// by a pull or a push) may be one another child still holds as a late copy. It must not go
// to that child, though its request is the oldest: it would take it for a duplicate ("task
// sent twice") and drop its parent (seen in the emulated push run of docs/results/migration.md).
TEST(LateCopies, ABufferedTaskNeverGoesToAChildHoldingALateCopy) {
  NodeState s;
  s.config.apps = {app("a", 1, 4)};
  s.port = PortModel::multi_port;
  s.children.emplace(ChildId{1}, ChildState{});
  s.children.emplace(ChildId{2}, ChildState{});
  s.buffer = {task(0, 0), task(0, 1)};
  s.requests = {PendingRequest{child(1), 0, 0}, PendingRequest{child(2), 0, 1}};
  s.late_copies[task(0, 0).id] = {child(1)};
  EXPECT_FALSE(s.can_assign(child(1), task(0, 0)));
  EXPECT_TRUE(s.can_assign(child(1), task(0, 1)));
  EXPECT_TRUE(s.can_assign(child(2), task(0, 0)));
  auto fcfs = make_policy("fcfs");
  const auto a = fcfs->select(s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->request, 0u);  // the oldest request, child 1 ...
  EXPECT_EQ(a->task, 1u);     // ... gets the task it holds no copy of
  for (const char* p : {"cgbc", "pbc"}) {
    auto policy = make_policy(p);
    policy->start(s);
    const auto b = policy->select(s);
    ASSERT_TRUE(b) << p;
    EXPECT_FALSE(s.requests[b->request].from == child(1) && s.buffer[b->task] == task(0, 0)) << p;
  }
}

}  // namespace
}  // namespace treefarm::core::testing
