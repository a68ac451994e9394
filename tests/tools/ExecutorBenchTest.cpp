#include "tools/bench/BackfillBench.hpp"
#include "tools/bench/KernelBench.hpp"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

using treefarm::bench::BackfillBenchOptions;
using treefarm::bench::KernelBenchOptions;
using treefarm::bench::bench_backfill;
using treefarm::bench::bench_kernel;

namespace {

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

BackfillBenchOptions tiny_backfill() {
  BackfillBenchOptions o;
  o.matmul_n = 96;
  o.matadd_n = 64;
  o.rounds = 6;
  o.window = 4;
  o.repeats = 2;
  return o;
}

KernelBenchOptions tiny_kernel() {
  KernelBenchOptions o;
  o.n = 64;
  o.tasks = 3;
  o.rounds = 2;
  o.speedup_n = {64, 96};
  o.speedup_reps = 1;
  return o;
}

void expect_run(const nlohmann::json& r, std::uint64_t matadd, std::uint64_t matmul) {
  EXPECT_GT(r.at("wall_seconds").get<double>(), 0);
  EXPECT_GT(r.at("busy_core_seconds").get<double>(), 0);
  EXPECT_GT(r.at("process_cpu_seconds").get<double>(), 0);
  const double u = r.at("utilisation").get<double>();
  EXPECT_GT(u, 0);
  EXPECT_LE(u, 1.0 + 1e-6);  // busy time is measured inside the wall interval
  EXPECT_EQ(r.at("matadd_tasks").get<std::uint64_t>(), matadd);
  EXPECT_EQ(r.at("matmul_tasks").get<std::uint64_t>(), matmul);
  EXPECT_EQ(r.at("tasks").get<std::uint64_t>(), matadd + matmul);
  // The rates are the counts over the wall time, the utilisation the busy time over the two
  // cores' wall time: a figure computed from the wrong numbers fails here.
  const double wall = r.at("wall_seconds").get<double>();
  EXPECT_NEAR(r.at("tasks_per_second").get<double>(), static_cast<double>(matadd + matmul) / wall,
              1e-9 * static_cast<double>(matadd + matmul) / wall);
  EXPECT_NEAR(r.at("matadd_per_second").get<double>(), static_cast<double>(matadd) / wall,
              1e-9 * static_cast<double>(matadd) / wall);
  EXPECT_NEAR(r.at("matmul_per_second").get<double>(), static_cast<double>(matmul) / wall,
              1e-9 * static_cast<double>(matmul) / wall);
  EXPECT_NEAR(u, r.at("busy_core_seconds").get<double>() / (2 * wall), 1e-9);
  EXPECT_GE(r.at("max_matmul_bypass").get<int>(), 0);
}

/// Runs `body` in a child bound to one CPU and returns what it wrote.
std::string output_on_one_cpu(int (*body)(std::ostream&)) {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) ++first;
  int pipefd[2];
  EXPECT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    std::string text = "setaffinity failed";
    int rc = 99;
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
      try {
        std::ostringstream out;
        rc = body(out);
        text = out.str();
      } catch (const std::exception& e) {
        text = std::string("exception: ") + e.what();
      }
    }
    text = std::to_string(rc) + "\n" + text;
    [[maybe_unused]] ssize_t w = write(pipefd[1], text.data(), text.size());
    _exit(0);
  }
  close(pipefd[1]);
  std::string text;
  char buf[4096];
  ssize_t got = 0;
  while ((got = read(pipefd[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(got));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return text;
}

}  // namespace

TEST(ExecutorBench, BackfillJsonIsWellFormed) {
  if (usable_cpus() < 2) GTEST_SKIP() << "needs 2 usable CPUs";
  std::ostringstream out;
  ASSERT_EQ(bench_backfill(out, [] {
              auto o = tiny_backfill();
              o.json = true;
              return o;
            }()),
            0);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("benchmark"), "backfill");
  EXPECT_FALSE(j.at("skipped").get<bool>());
  EXPECT_EQ(j.at("cores").size(), 2u);
  // 2 repeats x 6 rounds x (3 matadd + 1 matmul)
  expect_run(j.at("backfill"), 36, 12);
  expect_run(j.at("fifo"), 36, 12);
  // Strict FIFO never lets a task overtake a matmul task.
  EXPECT_EQ(j.at("fifo").at("max_matmul_bypass").get<int>(), 0);
  // Each ratio is backfill's figure over FIFO's, both taken from this run's JSON.
  for (const char* k : {"utilisation", "tasks_per_second", "matadd_per_second", "matmul_per_second"}) {
    const double expected = j.at("backfill").at(k).get<double>() / j.at("fifo").at(k).get<double>();
    EXPECT_NEAR(j.at("ratios").at(k).get<double>(), expected, 1e-9 * expected) << k;
  }
}

TEST(ExecutorBench, BackfillTextHasBothDisciplinesAndRatios) {
  if (usable_cpus() < 2) GTEST_SKIP() << "needs 2 usable CPUs";
  std::ostringstream out;
  auto o = tiny_backfill();
  o.repeats = 1;
  ASSERT_EQ(bench_backfill(out, o), 0);
  const std::string s = out.str();
  EXPECT_NE(s.find("\nbackfill "), std::string::npos) << s;
  EXPECT_NE(s.find("\nfifo "), std::string::npos) << s;
  EXPECT_NE(s.find("ratio backfill/fifo: utilisation "), std::string::npos) << s;
}

TEST(ExecutorBench, KernelJsonIsWellFormed) {
  if (usable_cpus() < 2) GTEST_SKIP() << "needs 2 usable CPUs";
  std::ostringstream out;
  auto o = tiny_kernel();
  o.json = true;
  ASSERT_EQ(bench_kernel(out, o), 0);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("benchmark"), "kernel");
  EXPECT_FALSE(j.at("skipped").get<bool>());
  const auto& e = j.at("efficiency");
  EXPECT_EQ(e.at("n").get<int>(), 64);
  EXPECT_GT(e.at("standalone_gflops").get<double>(), 0);
  EXPECT_GT(e.at("executor_gflops").get<double>(), 0);
  EXPECT_GT(e.at("executor_tasks_per_second").get<double>(), 0);
  // The ratio is the executor's rate over the standalone loop's; the task rate is the
  // executor's flop rate over one n = 64 matmul (2 n^3 flop).
  const double standalone = e.at("standalone_gflops").get<double>();
  const double executor = e.at("executor_gflops").get<double>();
  EXPECT_NEAR(e.at("ratio").get<double>(), executor / standalone, 1e-9 * executor / standalone);
  EXPECT_NEAR(e.at("executor_tasks_per_second").get<double>(), executor * 1e9 / (2.0 * 64 * 64 * 64),
              1e-6 * executor * 1e9 / (2.0 * 64 * 64 * 64));
  EXPECT_GT(e.at("standalone_cpu_share").get<double>(), 0);
  EXPECT_GT(e.at("executor_cpu_share").get<double>(), 0);
  EXPECT_EQ(e.at("standalone_gflops_rounds").size(), 2u);
  EXPECT_EQ(e.at("executor_gflops_rounds").size(), 2u);
  ASSERT_EQ(j.at("speedup").size(), 2u);
  EXPECT_EQ(j.at("speedup")[0].at("n").get<int>(), 64);
  EXPECT_EQ(j.at("speedup")[1].at("n").get<int>(), 96);
  for (const auto& s : j.at("speedup")) {
    for (const char* k : {"one_core_seconds", "two_core_seconds", "one_core_gflops",
                          "two_core_gflops", "speedup", "one_core_cpu_share",
                          "two_core_cpu_share"}) {
      EXPECT_GT(s.at(k).get<double>(), 0) << k;
    }
    // speed-up = 1-core time / 2-core time; GFLOP/s = 2 n^3 / time.
    const double t1 = s.at("one_core_seconds").get<double>();
    const double t2 = s.at("two_core_seconds").get<double>();
    const double flop = 2.0 * std::pow(s.at("n").get<double>(), 3);
    EXPECT_NEAR(s.at("speedup").get<double>(), t1 / t2, 1e-9 * t1 / t2);
    EXPECT_NEAR(s.at("one_core_gflops").get<double>(), flop / t1 / 1e9, 1e-9 * flop / t1 / 1e9);
    EXPECT_NEAR(s.at("two_core_gflops").get<double>(), flop / t2 / 1e9, 1e-9 * flop / t2 / 1e9);
  }
}

TEST(ExecutorBench, KernelTextNamesEveryFigure) {
  if (usable_cpus() < 2) GTEST_SKIP() << "needs 2 usable CPUs";
  std::ostringstream out;
  ASSERT_EQ(bench_kernel(out, tiny_kernel()), 0);
  const std::string s = out.str();
  EXPECT_NE(s.find("standalone cblas_dgemm loop"), std::string::npos) << s;
  EXPECT_NE(s.find("ratio executor/standalone"), std::string::npos) << s;
  EXPECT_NE(s.find("n=64 "), std::string::npos) << s;
  EXPECT_NE(s.find("n=96 "), std::string::npos) << s;
  EXPECT_NE(s.find("speed-up"), std::string::npos) << s;
}

TEST(ExecutorBench, SkipsOnOneCore) {
  const std::string backfill = output_on_one_cpu([](std::ostream& out) {
    return bench_backfill(out, tiny_backfill());
  });
  EXPECT_EQ(backfill.rfind("0\nskipped: bench backfill needs 2 usable cores", 0), 0u) << backfill;
  const std::string kernel_json = output_on_one_cpu([](std::ostream& out) {
    auto o = tiny_kernel();
    o.json = true;
    return bench_kernel(out, o);
  });
  ASSERT_EQ(kernel_json.rfind("0\n", 0), 0u) << kernel_json;
  const auto j = nlohmann::json::parse(kernel_json.substr(2));
  EXPECT_EQ(j.at("benchmark"), "kernel");
  EXPECT_TRUE(j.at("skipped").get<bool>());
  EXPECT_NE(j.at("reason").get<std::string>().find("2 usable cores"), std::string::npos);
}

TEST(ExecutorBench, RejectsZeroOptions) {
  std::ostringstream out;
  auto b = tiny_backfill();
  b.window = 0;
  EXPECT_THROW(bench_backfill(out, b), std::invalid_argument);
  auto k = tiny_kernel();
  k.speedup_n = {64, 0};
  EXPECT_THROW(bench_kernel(out, k), std::invalid_argument);
  EXPECT_TRUE(out.str().empty());
}
