/// Tests of tools/bench/InputBench (`treefarm bench inputs`).
#include "tools/bench/InputBench.hpp"

#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace treefarm::bench {
namespace {

TEST(InputBench, JsonHasEveryFigureForTheInputSizeAndCountsEveryInputTaken) {
  InputBenchOptions o;
  o.n = 64;
  o.inputs = 20;
  o.rounds = 3;
  o.json = true;
  std::ostringstream out;
  ASSERT_EQ(bench_inputs(out, o), 0);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("bytes_per_input").get<std::uint64_t>(), 2u * 64 * 64 * 8);
  for (const char* key : {"memcpy_ms", "fill_recycled_ms", "fill_fresh_ms", "prefetched_take_ms", "seed_ns",
                          "seed_keyed_blake2b_ns"})
    EXPECT_GT(j.at(key).get<double>(), 0.0) << key;
  EXPECT_DOUBLE_EQ(j.at("fill_over_memcpy").get<double>(),
                   j.at("fill_recycled_ms").get<double>() / j.at("memcpy_ms").get<double>());
  // Every input the loop side took came from the generator or was made on the spot.
  EXPECT_EQ(j.at("prefetch_ready").get<std::uint64_t>() + j.at("prefetch_waited").get<std::uint64_t>(), 60u);
}

TEST(InputBench, TextNamesTheReferenceAndZeroOptionsAreRefused) {
  InputBenchOptions o;
  o.n = 16;
  o.inputs = 2;
  o.rounds = 1;
  std::ostringstream out;
  ASSERT_EQ(bench_inputs(out, o), 0);
  EXPECT_NE(out.str().find("memcpy of the same bytes"), std::string::npos);
  EXPECT_NE(out.str().find("4096 bytes"), std::string::npos);  // 2·16²·8
  o.rounds = 0;
  EXPECT_THROW(bench_inputs(out, o), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::bench
