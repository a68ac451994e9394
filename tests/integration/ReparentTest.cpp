// Re-parenting later (`treefarm-worker --parent auto --reparent-every S`, docs/planning.md)
// with real processes on loopback: the worker re-evaluates its parent during the run and
// moves (a negative --reparent-gain makes it move to the best other node every time, so
// that the move path is exercised whatever the measured links); it leaves its parent with
// Bye and rejoins the new one, and every task is still recorded exactly once.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

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
  const std::uint64_t tasks = 1500;
  const auto exp = write_file(dir.path() / "re.toml",
                              "[[node]]\nname = \"m\"\ncores = 0\n"
                              "[[node]]\nname = \"w1\"\nparent = \"m\"\ncores = 1\n"
                              "[[node]]\nname = \"w2\"\nparent = \"w1\"\ncores = 1\n"
                              "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 200\ntasks = " + std::to_string(tasks) +
                              "\n[run]\nbuffer = 4\n");
  Child master({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                "--wait-workers", "3", "--wait-timeout", "60"},
               dir.path() / "master.log");
  const auto m_ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(m_ep.empty()) << master.output();
  Child w1({worker_bin, "--parent", m_ep, "--name", "w1", "--cores", "1", "--ready-file", (dir.path() / "w1.ep").string()},
           dir.path() / "w1.log");
  const auto w1_ep = wait_for_line(dir.path() / "w1.ep");
  ASSERT_FALSE(w1_ep.empty()) << w1.output();
  Child w2({worker_bin, "--parent", w1_ep, "--name", "w2", "--cores", "1", "--ready-file", (dir.path() / "w2.ep").string()},
           dir.path() / "w2.log");
  const auto w2_ep = wait_for_line(dir.path() / "w2.ep");
  ASSERT_FALSE(w2_ep.empty()) << w2.output();
  ASSERT_TRUE(wait_until([&] { return w1.output().find("child 'w2' joined") != std::string::npos; }, 30)) << w1.output();
  Child mover({worker_bin, "--join", w2_ep, "--parent", "auto", "--name", "mover", "--cores", "1", "--probe-bytes", "65536",
               "--reparent-every", "1", "--reparent-gain", "-1", "--listen", ""},
              dir.path() / "mover.log");
  const auto rc = master.wait(240);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output() << mover.output();
  const std::string log = mover.output();
  // It moved at least once, and a node admitted it again after each move.
  const std::size_t moves = count_of(log, "re-parenting: leaving");
  EXPECT_GE(moves, 1u) << log;
  const std::size_t joins =
      count_of(master.output(), "child 'mover' joined") + count_of(w1.output(), "child 'mover' joined") +
      count_of(w2.output(), "child 'mover' joined");
  EXPECT_GE(joins, moves) << log;  // the last move may be cut short by the end of the run
  EXPECT_GE(joins, 2u) << log;
  // Every task exactly once.
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  std::set<std::uint64_t> seen;
  for (const auto& t : j.at("tasks")) EXPECT_TRUE(seen.insert(t.at("id").get<std::uint64_t>()).second);
  EXPECT_EQ(seen.size(), tasks);
  EXPECT_TRUE(j.at("ok").get<bool>());
  EXPECT_EQ(mover.wait(30).value_or(-1), 0) << log;
}
