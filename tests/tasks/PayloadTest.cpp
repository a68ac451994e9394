#include "tasks/Payload.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/TaskRunner.hpp"

namespace treefarm::tasks {
namespace {

model::AppSpec make_app(model::Kernel kernel, std::uint32_t n, std::uint64_t bytes = 0) {
  model::AppSpec app;
  app.name = "app";
  app.kernel = kernel;
  app.n = n;
  app.bytes = bytes;
  return app;
}

std::vector<double> as_doubles(const std::vector<std::byte>& bytes) {
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(double));
  return values;
}

TEST(InputPoolTest, SameSeedGivesSameBytesAndChecksums) {
  for (const auto& app : {make_app(model::Kernel::matmul, 33), make_app(model::Kernel::matadd, 20),
                          make_app(model::Kernel::noop, 0, 1001)}) {
    SCOPED_TRACE(model::to_string(app.kernel));
    const InputPool first(app, 12345, 2, 3);
    const InputPool second(app, 12345, 2, 3);
    ASSERT_EQ(first.size(), 3u);
    for (std::size_t i = 0; i < first.size(); ++i) {
      EXPECT_EQ(*first.input(i), *second.input(i));
      EXPECT_EQ(first.expected_checksum(i), second.expected_checksum(i));
    }
  }
}

TEST(InputPoolTest, DifferentSeedAppIndexOrInputIndexGivesDifferentInputs) {
  const auto app = make_app(model::Kernel::matmul, 16);
  const InputPool base(app, 1, 0);
  const InputPool other_seed(app, 2, 0);
  const InputPool other_app(app, 1, 1);
  EXPECT_NE(*base.input(0), *other_seed.input(0));
  EXPECT_NE(base.expected_checksum(0), other_seed.expected_checksum(0));
  EXPECT_NE(*base.input(0), *other_app.input(0));
  EXPECT_NE(base.expected_checksum(0), other_app.expected_checksum(0));
  EXPECT_NE(*base.input(0), *base.input(1));
  EXPECT_NE(base.expected_checksum(0), base.expected_checksum(1));
}

TEST(InputPoolTest, NoopPayloadsDifferWithSeed) {
  const auto app = make_app(model::Kernel::noop, 0, 64);
  EXPECT_NE(*InputPool(app, 1, 0).input(0), *InputPool(app, 2, 0).input(0));
  EXPECT_NE(InputPool(app, 1, 0).expected_checksum(0), InputPool(app, 2, 0).expected_checksum(0));
}

TEST(InputPoolTest, GeneratedValuesAreKnownForFixedSeed) {
  // Pins the generator (splitmix64 from (seed, app index, input index)): a change here
  // breaks the "same on every machine" contract between a master and workers built from
  // different versions.
  std::vector<std::byte> matrices;
  fill_input(make_app(model::Kernel::matadd, 2), 7, 3, 1, matrices);
  const std::vector<double> expected{0x1.20306c1fe5dd5p-1, 0x1.c404ed8ffd93p-3,
                                     0x1.673d6706c3bdap-2, 0x1.98d2307b0a708p-4,
                                     0x1.360616a274d48p-3, 0x1.3551323783036p-2,
                                     0x1.c6a0f9575d1a2p-2, 0x1.952d8c073789ep-1};
  EXPECT_EQ(as_doubles(matrices), expected);

  std::vector<std::byte> payload;
  fill_input(make_app(model::Kernel::noop, 0, 10), 7, 3, 1, payload);
  const std::vector<unsigned> bytes{0x8c, 0xaa, 0xee, 0xf2, 0x0f, 0x36, 0x18, 0x90, 0x46, 0x63};
  ASSERT_EQ(payload.size(), bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    EXPECT_EQ(std::to_integer<unsigned>(payload[i]), bytes[i]) << i;
  }

  std::vector<std::byte> index0;
  fill_input(make_app(model::Kernel::matadd, 2), 7, 3, 0, index0);
  EXPECT_NE(matrices, index0);
}

TEST(InputPoolTest, MatrixInputsAreADoubleAThenBInUnitInterval) {
  const auto app = make_app(model::Kernel::matmul, 40);
  const InputPool pool(app, 99, 0);
  const auto& input = *pool.input(0);
  ASSERT_EQ(input.size(), app.input_bytes());
  ASSERT_EQ(input.size(), 2u * 40 * 40 * sizeof(double));
  const auto values = as_doubles(input);
  double sum = 0;
  for (double v : values) {
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    sum += v;
  }
  EXPECT_NEAR(sum / static_cast<double>(values.size()), 0.5, 0.05);  // 3200 uniforms
}

TEST(InputPoolTest, NoopInputHasExactlyBytesBytes) {
  for (std::uint64_t bytes : {0u, 1u, 7u, 8u, 13u, 4096u}) {
    const auto app = make_app(model::Kernel::noop, 0, bytes);
    const InputPool pool(app, 5, 0);
    EXPECT_EQ(pool.input(0)->size(), bytes);
  }
}

TEST(InputPoolTest, ExpectedChecksumIsWhatRunTaskReturns) {
  for (const auto& app : {make_app(model::Kernel::matmul, 65), make_app(model::Kernel::matadd, 65),
                          make_app(model::Kernel::noop, 0, 333)}) {
    SCOPED_TRACE(model::to_string(app.kernel));
    const InputPool pool(app, 4, 1);
    tbb::task_arena arena(2);
    for (std::size_t i = 0; i < pool.size(); ++i) {
      EXPECT_EQ(run_task(app, *pool.input(i), nullptr), pool.expected_checksum(i));
      EXPECT_TRUE(checksum_matches(pool.expected_checksum(i),
                                   run_task(app, *pool.input(i), &arena), app));
    }
    // The checksum of another pooled input does not verify.
    EXPECT_FALSE(checksum_matches(pool.expected_checksum(0),
                                  run_task(app, *pool.input(1), nullptr), app));
  }
}

TEST(InputPoolTest, InputForCyclesThroughThePool) {
  const InputPool pool(make_app(model::Kernel::noop, 0, 8), 1, 0, 3);
  EXPECT_EQ(pool.input_for(0), 0u);
  EXPECT_EQ(pool.input_for(1), 1u);
  EXPECT_EQ(pool.input_for(2), 2u);
  EXPECT_EQ(pool.input_for(3), 0u);
  EXPECT_EQ(pool.input_for(1'000'000'000'001ull), 1'000'000'000'001ull % 3);
}

TEST(InputPoolTest, DefaultPoolSizeIsTwo) {
  EXPECT_EQ(InputPool(make_app(model::Kernel::noop, 0, 8), 1, 0).size(), 2u);
}

TEST(InputPoolTest, BuffersAreSharedNotCopied) {
  const InputPool pool(make_app(model::Kernel::matadd, 8), 1, 0);
  InputBuffer held = pool.input(0);
  EXPECT_EQ(held.get(), pool.input(0).get());
  EXPECT_EQ(held.use_count(), 2);
}

TEST(InputPoolTest, RejectsZeroPoolSizeAndAbstractKernel) {
  EXPECT_THROW(InputPool(make_app(model::Kernel::matmul, 4), 1, 0, 0), std::invalid_argument);
  auto abstract = make_app(model::Kernel::abstract, 0, 100);
  abstract.flops = 1e9;
  EXPECT_THROW(InputPool(abstract, 1, 0), std::invalid_argument);
  EXPECT_THROW(InputPool(make_app(model::Kernel::matmul, 4), 1, 0).input(2), std::out_of_range);
}

}  // namespace
}  // namespace treefarm::tasks
