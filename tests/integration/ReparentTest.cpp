// Re-parenting later (`treefarm-worker --parent auto --reparent-every S`, docs/planning.md)
// with real processes on loopback: the worker re-evaluates its parent during the run and
// moves (a negative --reparent-gain makes it move to the best other node every time, so
// that the move path is exercised whatever the measured links); it leaves its parent with
// Bye and rejoins the new one, and every task is still recorded exactly once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/node/ExitCode.hpp"
#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/support/EveryTaskOnce.hpp"

using namespace treefarm::testing;

namespace {
std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST(ReparentTest, AWorkerThatMovesDuringTheRunKeepsEveryTaskExactlyOnce) {
  TempDir dir;
  // Long enough (several seconds) for the mover to join and move at least once after its
  // first re-parent period, however fast the machine computes the bag.
  const std::uint64_t tasks = 5000;
  ChainTree tree;
  const auto problem = tree.start(dir.path(), tasks, 200);
  ASSERT_TRUE(problem.empty()) << problem;
  auto& master = *tree.master;
  const std::string w2_ep = tree.w2_endpoint;
  Child mover({worker_bin, "--join", w2_ep, "--parent", "auto", "--name", "mover", "--cores", "1", "--probe-bytes", "65536",
               "--reparent-every", "1", "--reparent-gain", "-1", "--listen", "", "--rejoin-timeout", "3"},
              dir.path() / "mover.log");
  const auto rc = master.wait(240);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output() << mover.output();
  const std::string log = mover.output();
  // It moved at least once, and a node admitted it again after each move.
  const std::size_t moves = count_of(log, "re-parenting: leaving");
  EXPECT_GE(moves, 1u) << log;
  // A voluntary move is logged at info with its reason and predicted gain, never as the
  // error of a lost parent.
  EXPECT_EQ(count_of(log, "lost the parent: re-parenting"), 0u) << log;
  EXPECT_GE(count_of(log, "[info] mover: re-parenting from '"), moves) << log;
  EXPECT_NE(log.find("predicted fair throughput"), std::string::npos) << log;
  const std::size_t joins =
      count_of(master.output(), "child 'mover' joined") + count_of(tree.w1->output(), "child 'mover' joined") +
      count_of(tree.w2->output(), "child 'mover' joined");
  EXPECT_GE(joins, moves) << log;  // the last move may be cut short by the end of the run
  // A move completed (a second join) is certain only when it moved twice: with one move,
  // that move may be the one the run's end cut short (a fresh clone's CI saw one move,
  // one join, every task once, in a 6.7 s run).
  if (moves >= 2) {
    EXPECT_GE(joins, 2u) << log;
  }
  // Every task exactly once.
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  treefarm::test_support::every_task_once(j, tasks);
  EXPECT_TRUE(j.at("ok").get<bool>());
  // It ends with the run — unless its last move raced the run's end: then it was between
  // parents when the tree shut down, missed the Shutdown, and (as a worker whose parent
  // may come back, docs/fault-tolerance.md) rejoins for --rejoin-timeout before exiting
  // with "parent lost". Seen 3 times in 24 runs under load; the tasks are unaffected.
  const int mover_rc = mover.wait(30).value_or(-1);
  if (mover_rc != 0) {
    const std::string final_log = mover.output();
    EXPECT_EQ(mover_rc, treefarm::node::exit_parent_lost) << final_log;
    EXPECT_NE(final_log.find("could not rejoin within"), std::string::npos) << final_log;
  }
}
