// Task deadlines with real processes (docs/fault-tolerance.md, "Task deadlines"): a
// worker stopped with SIGSTOP mid-run keeps its connection (heartbeats are set long here,
// so it is not declared dead); the tasks it holds are re-issued to the other worker after
// their deadline and the run completes with every task exactly once.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {



}  // namespace

TEST(FaultTest, ASigstoppedWorkersTasksAreReissuedAndTheRunCompletesExactlyOnce) {
  TempDir dir;
  // A bag long enough that the stop comes mid-run on a quiet machine too (1,500 tasks of n = 256
  // ended in 0.96 s, before the first progress line).
  const std::uint64_t tasks = 10000;
  const auto exp = write_file(dir.path() / "stop.toml",
                              "[[node]]\nname = \"m\"\ncores = 0\n"
                              "[[node]]\nname = \"w1\"\nparent = \"m\"\ncores = 1\n"
                              "[[node]]\nname = \"w2\"\nparent = \"m\"\ncores = 1\n"
                              "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 256\ntasks = " + std::to_string(tasks) +
                                  "\n[run]\nbuffer = 4\ncomm_model = \"multi-port\"\n");
  const std::vector<std::string> patience = {"--heartbeat-interval", "1", "--heartbeat-timeout", "120"};
  auto with = [&](std::vector<std::string> argv) {
    argv.insert(argv.end(), patience.begin(), patience.end());
    return argv;
  };
  Child master(with({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                     "--wait-workers", "2", "--task-deadline-floor", "1", "--task-deadline-factor", "4"}),
               dir.path() / "master.log");
  const auto ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(ep.empty()) << master.output();
  Child w1(with({worker_bin, "--parent", ep, "--name", "w1", "--cores", "1", "--listen", "", "--rejoin-timeout", "5"}),
           dir.path() / "w1.log");
  Child w2(with({worker_bin, "--parent", ep, "--name", "w2", "--cores", "1", "--listen", ""}), dir.path() / "w2.log");
  ASSERT_TRUE(wait_until([&] { return progress_done(master.output()) > tasks / 4; }, 120)) << master.output();
  ASSERT_EQ(kill(w1.pid(), SIGSTOP), 0);
  const auto rc = master.wait(150);
  kill(w1.pid(), SIGCONT);  // whatever happened, the stopped worker runs again and ends
  ASSERT_TRUE(rc.has_value()) << "the run stalled on the stopped worker's tasks\n" << master.output();
  EXPECT_EQ(*rc, 0) << master.output();
  EXPECT_NE(master.output().find("re-issued after their deadline"), std::string::npos) << master.output();

  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  std::set<std::uint64_t> seen;
  for (const auto& t : j.at("tasks")) EXPECT_TRUE(seen.insert(t.at("id").get<std::uint64_t>()).second);
  EXPECT_EQ(seen.size(), tasks);
  for (const auto& a : j.at("apps")) {
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u);
    EXPECT_EQ(a.at("completed").get<std::uint64_t>(), tasks);
  }
  EXPECT_TRUE(w2.wait(30).has_value()) << w2.output();
  EXPECT_TRUE(w1.wait(30).has_value()) << "the resumed worker did not end\n" << w1.output();
}
