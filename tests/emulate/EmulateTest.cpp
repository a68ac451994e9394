// tools/emulate/Emulate: a whole experiment runs on an emulated star with the real
// master and worker binaries, every task exactly once, and nothing is left behind.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/emulate/EmulationTestSupport.hpp"
#include "tools/emulate/Emulate.hpp"

namespace fs = std::filesystem;
using namespace treefarm::emulate;
using namespace treefarm::emulate::testing;

namespace {

// Two workers behind links five times apart in rate; the tasks are communication-bound
// (matadd 256 KiB, matmul 576 KiB of input per task), so the fast link must win more.
// Multi-port: under the one-port model (now enforced for real: a transfer ends with the
// child's acknowledgement) FCFS alternates the two children on the one port, and the slow
// link's transfers hold it five times longer — the paper's case against FCFS.
const char* const star = R"(
[[node]]
name = "master"
cores = 0
cpu_quota = 0.2
[[node]]
name = "fast"
parent = "master"
cores = 1
bandwidth = "80Mbps"
cpu_quota = 0.8
[[node]]
name = "slow"
parent = "master"
cores = 1
bandwidth = "16Mbps"
cpu_quota = 0.8
cpuset = "1"
[[app]]
name = "ma"
kernel = "matadd"
n = 128
tasks = 120
[[app]]
name = "mm"
kernel = "matmul"
n = 192
tasks = 60
[run]
buffer = 4
comm_model = "multi-port"
)";

}  // namespace

TEST(Emulate, StarRunsEveryTaskExactlyOnceAndLeavesNothing) {
  SKIP_UNLESS_EMULATION();
  const EmulationRun run(star, 300);
  std::atomic<bool> interrupted{false};
  const int rc = emulate_command(run.file, "run", run.options, interrupted);
  ASSERT_EQ(rc, 0) << "logs in " << run.out() / "logs";

  std::ifstream f(run.out() / "results.json");
  const auto results = nlohmann::json::parse(f);
  EXPECT_TRUE(results.at("ok").get<bool>());
  EXPECT_EQ(results.at("lost").get<int>(), 0);
  EXPECT_EQ(results.at("duplicates").get<int>(), 0);
  std::map<std::string, std::uint64_t> expected{{"ma", 120}, {"mm", 60}};
  for (const auto& app : results.at("apps"))
    EXPECT_EQ(app.at("completed").get<std::uint64_t>(), expected.at(app.at("name").get<std::string>()));
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (const auto& t : results.at("tasks"))
    EXPECT_TRUE(seen.emplace(t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()).second)
        << "task recorded twice: " << t.dump();
  EXPECT_EQ(seen.size(), 180u);
  std::map<std::string, std::uint64_t> computed;
  for (const auto& n : results.at("nodes")) computed[n.at("name").get<std::string>()] = n.at("tasks_computed").get<std::uint64_t>();
  EXPECT_EQ(computed["fast"] + computed["slow"], 180u);
  EXPECT_GT(computed["slow"], 0u);
  EXPECT_GT(computed["fast"], computed["slow"]) << "the 80 Mbit/s link should carry more tasks than the 16 Mbit/s one";

  EXPECT_EQ(leftovers(run.prefix), std::vector<std::string>{});
}

TEST(Emulate, InterruptedBeforeTheRunReturns130AndLeavesNothing) {
  SKIP_UNLESS_EMULATION();
  const EmulationRun run(star, 300);
  std::atomic<bool> interrupted{true};
  EXPECT_EQ(emulate_command(run.file, "run", run.options, interrupted), 130);
  EXPECT_EQ(leftovers(run.prefix), std::vector<std::string>{});
}

TEST(Emulate, UnknownModesAreRefused) {
  const EmulationRun run(star, 300);
  std::atomic<bool> interrupted{false};
  EXPECT_THROW(emulate_command(run.file, "bogus", {}, interrupted), std::invalid_argument);
}
