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

namespace treefarm::exec {
namespace {

node::Payload bytes(std::size_t n, unsigned char fill) {
  auto v = std::make_shared<std::vector<std::byte>>(n, std::byte{fill});
  return node::share(std::move(v));
}

ExecutorConfig one_core() {
  ExecutorConfig c;
  c.cores = {discover_topology().cores.at(0)};
  return c;
}

TEST(ExecutorRunner, TinyNoopTasksRunInlineAndAreReportedOnlyByCollect) {
  ExecutorRunner r(one_core());
  model::AppSpec noop;
  noop.name = "noop";
  noop.kernel = model::Kernel::noop;
  noop.bytes = 16;
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
  model::AppSpec noop;
  noop.name = "noop";
  noop.kernel = model::Kernel::noop;
  noop.bytes = 16;
  r.start(1, noop, bytes(3, 0));
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
  model::AppSpec mm, add;
  mm.name = "mm";
  mm.kernel = model::Kernel::matmul;
  mm.n = 32;
  add.name = "add";
  add.kernel = model::Kernel::matadd;
  add.n = 8;
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

TEST(ExecutorRunner, OtherTasksGoToTheCoreThreads) {
  ExecutorRunner r(one_core());
  model::AppSpec add;
  add.name = "mm";
  add.kernel = model::Kernel::matmul;
  add.n = 128;  // 2·128³ flop: above the inline bound
  r.start(3, add, bytes(add.input_bytes(), 0));
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
