#include "tasks/Payload.hpp"

#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/TaskRunner.hpp"
#include "tests/support/TestApps.hpp"

namespace treefarm::tasks {
namespace {

using test_support::make_app;

std::vector<double> as_doubles(const std::vector<std::byte>& bytes) {
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(double));
  return values;
}

TEST(FillInputTest, IntoASpanTheSameBytesAsIntoAVectorAndOnlyOfTheRightSize) {
  for (const auto& app : {make_app(model::Kernel::matmul, 5), make_app(model::Kernel::matadd, 3),
                          make_app(model::Kernel::noop, 0, 13)}) {
    SCOPED_TRACE(model::to_string(app.kernel));
    std::vector<std::byte> expected;
    fill_input(app, 77, 1, 0, expected);
    std::vector<std::byte> out(app.input_bytes(), std::byte{0xAA});
    fill_input(app, 77, 1, 0, std::span<std::byte>(out));
    EXPECT_EQ(out, expected);
    std::vector<std::byte> wrong(app.input_bytes() + 1);
    EXPECT_THROW(fill_input(app, 77, 1, 0, std::span<std::byte>(wrong)), std::invalid_argument);
  }
  std::vector<std::byte> none;
  EXPECT_THROW(fill_input(make_app(model::Kernel::abstract, 4), 1, 0, 0, std::span<std::byte>(none)),
               std::invalid_argument);
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
  // Pins the generator (eight xoshiro256+ lanes seeded by splitmix64 from (seed, app
  // index, input index), two doubles from each word; FillInputTest checks it word by
  // word): a change here changes every input and calibration measured before it.
  // n = 4: 32 doubles, two blocks of 16; the first 16 are pinned: the high halves of the
  // eight lanes' first words, then their low halves.
  std::vector<std::byte> matrices;
  fill_input(make_app(model::Kernel::matadd, 4), 7, 3, 1, matrices);
  const std::vector<double> expected{0x1.534ab22e00000p-1, 0x1.e2af11ae00000p-1, 0x1.ff52acca00000p-1,
                                     0x1.6c713d3800000p-2, 0x1.5f39f15600000p-1, 0x1.42a8612400000p-2,
                                     0x1.483f52b600000p-1, 0x1.4543e85e00000p-1, 0x1.472b73fe00000p-1,
                                     0x1.d4bf0ed800000p-1, 0x1.65b986e000000p-4, 0x1.6d9e892e00000p-1,
                                     0x1.d73d7f8c00000p-2, 0x1.29b25e6200000p-1, 0x1.acfe4da800000p-1,
                                     0x1.19daca3c00000p-2};
  const auto values = as_doubles(matrices);
  ASSERT_EQ(values.size(), 32u);
  EXPECT_EQ(std::vector<double>(values.begin(), values.begin() + 16), expected);

  std::vector<std::byte> payload;
  fill_input(make_app(model::Kernel::noop, 0, 10), 7, 3, 1, payload);
  const std::vector<unsigned> bytes{0x9e, 0xc9, 0x01, 0x12, 0xa4, 0xad, 0x1c, 0x6f, 0xbf, 0xe5};
  ASSERT_EQ(payload.size(), bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    EXPECT_EQ(std::to_integer<unsigned>(payload[i]), bytes[i]) << i;
  }

  std::vector<std::byte> index0;
  fill_input(make_app(model::Kernel::matadd, 4), 7, 3, 0, index0);
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

// The input stream as docs and Payload.hpp define it, written out one word at a time:
// the vectorised fill (one clone per vector width) must give exactly these values.
std::uint64_t splitmix_next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<std::uint64_t> reference_words(std::uint64_t seed, std::uint32_t app_index, std::size_t words) {
  std::uint64_t mixer = seed;
  std::uint64_t s = splitmix_next(mixer) ^ (std::uint64_t{app_index} << 32);
  const std::uint64_t stream = splitmix_next(s);
  std::uint64_t seeder = stream;
  constexpr std::size_t lanes = 8;
  std::uint64_t st[lanes][4];
  for (auto& lane : st)
    for (auto& word : lane) word = splitmix_next(seeder);
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i + lanes <= words; i += lanes) {
    for (auto& x : st) {  // xoshiro256+ (Blackman and Vigna 2018)
      out.push_back(x[0] + x[3]);
      const std::uint64_t t = x[1] << 17;
      x[2] ^= x[0];
      x[3] ^= x[1];
      x[1] ^= x[2];
      x[0] ^= x[3];
      x[2] ^= t;
      x[3] = (x[3] << 45) | (x[3] >> 19);
    }
  }
  while (out.size() < words) out.push_back(splitmix_next(seeder));
  return out;
}

TEST(FillInputTest, MatrixValuesAreTheDefinedStreamInZeroOne) {
  // 2·5² = 50 doubles: three blocks of 16 (each round of the eight lanes gives the high
  // halves of its words, then their low halves) and two doubles from the tail.
  const auto app = make_app(model::Kernel::matadd, 5);
  std::vector<std::byte> bytes;
  fill_input(app, 777, 3, 0, bytes);
  const auto values = as_doubles(bytes);
  const auto words = reference_words(777, 3, 26);  // 3 rounds of 8 lanes, then 2 words of the seeder
  ASSERT_EQ(values.size(), 50u);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::size_t block = i / 16, at = i % 16;
    const std::uint64_t half = i >= 48              ? words[24 + (i - 48)] >> 32
                               : at < 8             ? words[8 * block + at] >> 32
                                                    : words[8 * block + at - 8] & 0xFFFFFFFFull;
    EXPECT_EQ(values[i], static_cast<double>(half) * 0x1.0p-32) << "value " << i;
    EXPECT_GE(values[i], 0.0);
    EXPECT_LT(values[i], 1.0);
  }
}

TEST(FillInputTest, NoopBytesAreTheStreamLittleEndianWithATail) {
  const auto app = make_app(model::Kernel::noop, 0, 8 * 17 + 5);
  std::vector<std::byte> bytes;
  fill_input(app, 42, 1, 0, bytes);
  ASSERT_EQ(bytes.size(), 8u * 17 + 5);
  const auto words = reference_words(42, 1, 17);
  for (std::size_t i = 0; i < 8 * 17; ++i)
    EXPECT_EQ(bytes[i], static_cast<std::byte>(words[i / 8] >> (8 * (i % 8)))) << "byte " << i;
  std::vector<std::byte> again;
  fill_input(app, 42, 1, 0, again);
  EXPECT_EQ(bytes, again);  // the tail too
  fill_input(app, 43, 1, 0, again);
  EXPECT_NE(bytes, again);
}

TEST(FillInputTest, LargeInputsHaveTheMeanAndSpreadOfAUniform) {
  const auto app = make_app(model::Kernel::matmul, 256);
  std::vector<std::byte> bytes;
  fill_input(app, 9, 0, 0, bytes);
  const auto values = as_doubles(bytes);
  double sum = 0, sum2 = 0;
  for (double v : values) {
    sum += v;
    sum2 += v * v;
  }
  const double n = static_cast<double>(values.size());
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(sum2 / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
}

}  // namespace
}  // namespace treefarm::tasks
