/// Replays the driver fuzz corpus (tests/fuzz/corpus/driver) through fuzz_driver.cpp's own
/// body (compiled here under the name TREEFARM_FUZZ_DRIVER_ENTRY), so that every compiler
/// runs the sessions the fuzzer starts from or found, and checks that they reach the driver:
/// every session hands it decoded messages and it answers through its transport, and the
/// corpus as a whole makes it start tasks on its cores.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

#include "tests/fuzz/FuzzDriverStats.hpp"

extern "C" int TREEFARM_FUZZ_DRIVER_ENTRY(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

TEST(DriverFuzzCorpus, EverySessionRunsWithoutCrashing) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(TREEFARM_DRIVER_CORPUS))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 4u) << "the seed corpus is missing";
  std::size_t jobs = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    SCOPED_TRACE(f.string());
    EXPECT_EQ(TREEFARM_FUZZ_DRIVER_ENTRY(bytes.data(), bytes.size()), 0);
    const auto stats = fuzz_driver_last_stats();
    EXPECT_GT(stats.messages_delivered, 0u) << "no message of the session reached the driver";
    EXPECT_GT(stats.sends, 0u) << "the driver sent nothing in answer";
    jobs += stats.jobs_started;
  }
  EXPECT_GT(jobs, 0u) << "no session made the driver start a task";
}

TEST(DriverFuzzCorpus, GarbageRunsWithoutCrashing) {
  // A fixed pseudo-random spread of inputs (the bounded fuzzer does far more under clang).
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 300; ++i) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(i * 7 % 700));
    for (auto& b : bytes) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b = static_cast<std::uint8_t>(x);
    }
    EXPECT_EQ(TREEFARM_FUZZ_DRIVER_ENTRY(bytes.data(), bytes.size()), 0);
  }
}

}  // namespace
