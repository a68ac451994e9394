/// Tests of runtime/exec/ExecutorRunner: the fast path runs tiny tasks (InlineTasks.hpp) on the
/// caller's thread but reports them only through collect(), in order, with their checksum;
/// anything else goes to the executor's core threads.

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/exec/ExecutorRunner.hpp"
#include "runtime/exec/Topology.hpp"
#include "tasks/TaskRunner.hpp"
#include "tests/support/TestApps.hpp"

namespace treefarm::exec {
namespace {

node::Payload bytes(std::size_t n, unsigned char fill) {
  auto v = std::make_shared<std::vector<std::byte>>(n, std::byte{fill});
  return node::share(std::move(v));
}

using test_support::make_app;

ExecutorConfig one_core() {
  ExecutorConfig c;
  c.cores = {discover_topology().cores.at(0)};
  return c;
}

TEST(ExecutorRunner, TinyNoopTasksRunInlineAndAreReportedOnlyByCollect) {
  ExecutorRunner r(one_core());
  const auto noop = make_app(model::Kernel::noop, 0, 16);
  const auto a = bytes(16, 1), b = bytes(16, 2);
  r.start(7, noop, a);
  r.start(8, noop, b);
  EXPECT_TRUE(r.has_inline_done());  // done already, not yet reported
  std::vector<std::uint64_t> order;
  std::vector<double> sums;
  r.collect([&](std::uint64_t job, node::JobOutcome o) {
    EXPECT_FALSE(o.failed) << o.error;
    order.push_back(job);
    sums.push_back(o.checksum);
  });
  EXPECT_FALSE(r.has_inline_done());
  ASSERT_EQ(order, (std::vector<std::uint64_t>{7, 8}));
  // The same checksum as the kernel computes anywhere else.
  EXPECT_DOUBLE_EQ(sums[0], tasks::run_task(noop, {a->data(), a->size()}, nullptr));
  EXPECT_NE(sums[0], sums[1]);
}

TEST(ExecutorRunner, AWrongInputFailsTheTaskNotTheNode) {
  ExecutorRunner r(one_core());
  r.start(1, make_app(model::Kernel::noop, 0, 16), bytes(3, 0));
  bool seen = false;
  r.collect([&](std::uint64_t job, node::JobOutcome o) {
    EXPECT_EQ(job, 1u);
    EXPECT_TRUE(o.failed);
    EXPECT_NE(o.error.find("expected 16"), std::string::npos) << o.error;
    seen = true;
  });
  EXPECT_TRUE(seen);
}

TEST(ExecutorRunner, TinyMatrixTasksRunInlineWithTheKernelsChecksum) {
  ExecutorRunner r(one_core());
  const auto mm = make_app(model::Kernel::matmul, 32), add = make_app(model::Kernel::matadd, 8);
  const auto a = r.calibration_input(mm, 5, 0), b = r.calibration_input(add, 5, 1);
  r.start(1, mm, a);
  r.start(2, add, b);
  EXPECT_TRUE(r.has_inline_done());
  std::vector<std::pair<std::uint64_t, double>> got;
  r.collect([&](std::uint64_t job, node::JobOutcome o) {
    EXPECT_FALSE(o.failed) << o.error;
    got.emplace_back(job, o.checksum);
  });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, 1u);
  EXPECT_DOUBLE_EQ(got[0].second, tasks::run_task(mm, {a->data(), a->size()}, nullptr));
  EXPECT_EQ(got[1].first, 2u);
  EXPECT_DOUBLE_EQ(got[1].second, tasks::run_task(add, {b->data(), b->size()}, nullptr));
}

TEST(ExecutorRunner, ABurstOfInlineTasksReadsTheThreadsCpuClockOnlyAFewTimes) {
  // As the node's loop drives it: each collect() hands the task done, and its callback
  // starts the next one inline. The thread's CPU clock (a system call) is read per burst,
  // not twice per task; each task carries its application's CPU owed so far, and over the
  // bursts the kernels' CPU adds up to at most their wall time.
  ExecutorRunner r(one_core());
  const auto mm = make_app(model::Kernel::matmul, 32);
  const auto input = r.calibration_input(mm, 5, 0);
  constexpr int tasks = 200;
  int started = 0;
  double cpu = 0, wall = 0;
  const auto burst = [&](int count) {
    r.start_task(static_cast<std::uint64_t>(started), mm, input, 0);
    ++started;
    for (int left = count - 1; r.has_inline_done();)
      r.collect([&](std::uint64_t, node::JobOutcome o) {
        EXPECT_FALSE(o.failed) << o.error;
        EXPECT_GE(o.cpu_seconds, 0.0);
        cpu += o.cpu_seconds;
        wall += o.run_seconds;
        if (left-- > 0) r.start_task(static_cast<std::uint64_t>(started++), mm, input, 0);
      });
  };
  const auto t0 = std::chrono::steady_clock::now();
  burst(tasks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::size_t reads = r.inline_cpu_reads();
  // Two per burst, and two per millisecond of it at most (InlineCpu::max_window_seconds):
  // 200 tasks of ~5 µs read it a few times, not 400 (twice per task).
  EXPECT_GE(reads, 2u);
  EXPECT_LE(static_cast<double>(reads), 2.0 + 2.0 * seconds / InlineCpu::max_window_seconds + 2.0) << seconds << " s";
  // Reading it twice per task made 400; even a burst slowed to a millisecond per task stays below.
  EXPECT_LT(reads, static_cast<std::size_t>(2 * tasks)) << "the clock read per task (" << seconds << " s)";
  burst(1);  // a later burst's task carries what the first one left owed
  EXPECT_EQ(started, tasks + 1);
  EXPECT_GT(cpu, 0.0) << "the kernels' CPU is reported";
  EXPECT_LE(cpu, wall + 1e-6) << "one thread uses at most its kernels' wall time";
  // A calibration run (start) is nobody's task: it carries no CPU.
  r.start(99, mm, input);
  r.collect([&](std::uint64_t job, node::JobOutcome o) {
    EXPECT_EQ(job, 99u);
    EXPECT_LT(o.cpu_seconds, 0.0);
  });
}

TEST(ExecutorRunner, OtherTasksGoToTheCoreThreads) {
  ExecutorRunner r(one_core());
  const auto mm = make_app(model::Kernel::matmul, 128);  // 2·128³ flop: above the inline bound
  r.start(3, mm, bytes(mm.input_bytes(), 0));
  EXPECT_FALSE(r.has_inline_done());
  bool seen = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    r.collect([&](std::uint64_t job, node::JobOutcome o) {
      EXPECT_EQ(job, 3u);
      EXPECT_FALSE(o.failed) << o.error;
      seen = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace treefarm::exec
