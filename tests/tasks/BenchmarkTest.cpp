#include "tasks/Benchmark.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

namespace treefarm::tasks {
namespace {

TEST(TimeKernelTest, ReturnsAPositiveMedianAndLargerTasksTakeLonger) {
  model::AppSpec small;
  small.kernel = model::Kernel::matmul;
  small.n = 32;
  model::AppSpec large = small;
  large.n = 256;  // 512× the flop of n = 32
  const double t_small = time_kernel(small, 5, nullptr);
  const double t_large = time_kernel(large, 3, nullptr);
  EXPECT_GT(t_small, 0.0);
  EXPECT_GT(t_large, t_small);
  tbb::task_arena arena(2);
  EXPECT_GT(time_kernel(large, 2, &arena), 0.0);
}

TEST(TimeKernelTest, RejectsBadArguments) {
  model::AppSpec app;
  app.kernel = model::Kernel::noop;
  app.bytes = 8;
  EXPECT_THROW(time_kernel(app, 0, nullptr), std::invalid_argument);
  app.kernel = model::Kernel::abstract;
  EXPECT_THROW(time_kernel(app, 3, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::tasks
