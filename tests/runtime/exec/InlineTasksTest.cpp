/// Tests of runtime/exec/InlineTasks: which tasks run on the node's loop thread.
#include "runtime/exec/InlineTasks.hpp"

#include <gtest/gtest.h>

namespace treefarm::exec {
namespace {

model::AppSpec app(model::Kernel kernel, std::uint32_t n, std::uint32_t cores = 1) {
  model::AppSpec a;
  a.kernel = kernel;
  a.n = n;
  a.bytes = 16;
  a.cores_per_task = cores;
  return a;
}

TEST(InlineTasks, TinyBuiltInKernelsRunInline) {
  for (const auto& a : {app(model::Kernel::noop, 0), app(model::Kernel::matmul, 32), app(model::Kernel::matmul, 64),
                        app(model::Kernel::matadd, 64)})
    EXPECT_TRUE(runs_inline(a, a.input_bytes())) << model::to_string(a.kernel) << " n=" << a.n;
}

TEST(InlineTasks, LargeMultiCoreCommandAndAbstractTasksDoNot) {
  EXPECT_FALSE(runs_inline(app(model::Kernel::matmul, 65), app(model::Kernel::matmul, 65).input_bytes()));  // flop and bytes
  EXPECT_FALSE(runs_inline(app(model::Kernel::matadd, 65), app(model::Kernel::matadd, 65).input_bytes()));  // bytes
  EXPECT_FALSE(runs_inline(app(model::Kernel::matmul, 32, 2), app(model::Kernel::matmul, 32).input_bytes()));
  EXPECT_FALSE(runs_inline(app(model::Kernel::noop, 0), inline_max_input_bytes + 1));
  EXPECT_FALSE(runs_inline(app(model::Kernel::command, 0), 16));
  EXPECT_FALSE(runs_inline(app(model::Kernel::abstract, 0), 16));
}

}  // namespace
}  // namespace treefarm::exec
