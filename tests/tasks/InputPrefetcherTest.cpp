#include "tasks/InputPrefetcher.hpp"

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace treefarm::tasks {
namespace {

model::AppSpec matrix_app(std::uint32_t n, std::uint64_t tasks) {
  model::AppSpec app;
  app.name = "ma";
  app.kernel = model::Kernel::matadd;
  app.n = n;
  app.tasks = tasks;
  return app;
}

std::uint64_t seed_of(std::uint32_t app, std::uint64_t index) { return 1000 * (app + 1) + index * 7; }

std::vector<std::byte> expected_input(const model::AppSpec& app, std::uint32_t k, std::uint64_t index) {
  std::vector<std::byte> out;
  fill_input(app, seed_of(k, index), k, 0, out);
  return out;
}

InputPrefetcher::Options small_options() {
  InputPrefetcher::Options o;
  o.min_prefetch_bytes = 1024;  // 2·64²·8 = 64 KiB inputs are prefetched
  o.budget_bytes = 8 * 65536;   // eight inputs ahead
  return o;
}

// Waits until the generator has made `count` inputs (it runs on its own thread).
void wait_generated(const InputPrefetcher& p, std::uint64_t count) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (p.stats().generated < count && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(InputPrefetcher, EveryInputIsTheOneItsSeedDefinesInAnyOrder) {
  const std::vector<model::AppSpec> apps{matrix_app(64, 100), matrix_app(48, 100)};
  InputPrefetcher p(apps, seed_of, small_options());
  // In order, skipping ahead (tasks done in an earlier run), then back (a re-issued task).
  for (std::uint64_t i : {0, 1, 2, 3, 10, 11, 12, 5, 13, 99}) {
    for (std::uint32_t k = 0; k < 2; ++k) {
      const auto input = p.get(k, i);
      ASSERT_EQ(*input, expected_input(apps[k], k, i)) << "app " << k << " task " << i;
    }
  }
}

TEST(InputPrefetcher, FillWritesTheSameInputIntoTheCallersBytesAndCountsIt) {
  const std::vector<model::AppSpec> apps{matrix_app(4, 100), matrix_app(3, 100)};  // small: made on the caller
  InputPrefetcher p(apps, seed_of, small_options());
  for (std::uint64_t i : {0, 1, 7}) {
    for (std::uint32_t k = 0; k < 2; ++k) {
      std::vector<std::byte> out(apps[k].input_bytes());
      p.fill(k, i, out);
      ASSERT_EQ(out, expected_input(apps[k], k, i)) << "app " << k << " task " << i;
    }
  }
  EXPECT_EQ(p.stats().generated_on_caller, 6u);
  EXPECT_EQ(p.stats().generated, 6u);
  std::vector<std::byte> out(apps[0].input_bytes());
  EXPECT_THROW(p.fill(2, 0, out), std::out_of_range);
}

TEST(InputPrefetcher, InputsAreReadyBeforeTheyAreAskedFor) {
  const std::vector<model::AppSpec> apps{matrix_app(64, 100)};
  InputPrefetcher p(apps, seed_of, small_options());
  wait_generated(p, 8);  // eight ahead: the budget
  for (std::uint64_t i = 0; i < 8; ++i) EXPECT_EQ(*p.get(0, i), expected_input(apps[0], 0, i));
  const auto s = p.stats();
  EXPECT_EQ(s.ready, 8u);
  EXPECT_EQ(s.generated_on_caller, 0u);
  EXPECT_GT(s.generate_seconds, 0.0);
}

TEST(InputPrefetcher, BuffersAreRecycledNotAllocatedPerTask) {
  const std::vector<model::AppSpec> apps{matrix_app(64, 500)};
  InputPrefetcher p(apps, seed_of, small_options());
  std::set<const std::byte*> storage;
  for (std::uint64_t i = 0; i < 500; ++i) {
    const auto input = p.get(0, i);  // released at once, as after a send
    ASSERT_EQ(*input, expected_input(apps[0], 0, i)) << "task " << i;
    storage.insert(input->data());
  }
  // Eight ready, eight recycled, one in the generator's hands, one in ours: never 500.
  EXPECT_LE(storage.size(), 20u);
}

TEST(InputPrefetcher, SmallInputsAreMadeOnTheCallerAndOutlastThePrefetcher) {
  model::AppSpec noop;
  noop.name = "tiny";
  noop.kernel = model::Kernel::noop;
  noop.bytes = 100;
  noop.tasks = 10;
  InputBuffer kept;
  {
    InputPrefetcher p({noop}, seed_of, InputPrefetcher::Options{});
    for (std::uint64_t i = 0; i < 10; ++i) kept = p.get(0, i);
    EXPECT_EQ(p.stats().generated_on_caller, 10u);
    EXPECT_EQ(p.stats().ready, 0u);
  }
  std::vector<std::byte> expected;
  fill_input(noop, seed_of(0, 9), 0, 0, expected);
  EXPECT_EQ(*kept, expected);  // still readable after the prefetcher is gone
}

TEST(InputPrefetcher, UnknownApplicationIsRefused) {
  InputPrefetcher p({matrix_app(8, 1)}, seed_of);
  EXPECT_THROW(p.get(1, 0), std::out_of_range);
}

TEST(InputPrefetcher, AnErrorWhileMakingAheadIsThrownToTheCaller) {
  const std::vector<model::AppSpec> apps{matrix_app(64, 100)};
  std::atomic<int> calls{0};
  // The seed function fails from the third input on: the generator thread meets the error
  // first; the caller must get it as an exception, not a terminated process.
  InputPrefetcher p(apps, [&calls](std::uint32_t, std::uint64_t index) -> std::uint64_t {
    ++calls;
    if (index >= 2) throw std::runtime_error("input source gone");
    return index;
  }, small_options());
  EXPECT_EQ(p.get(0, 0)->size(), 2u * 64 * 64 * 8);
  EXPECT_EQ(p.get(0, 1)->size(), 2u * 64 * 64 * 8);
  EXPECT_THROW(p.get(0, 2), std::runtime_error);
  EXPECT_GE(calls, 3);
}

}  // namespace
}  // namespace treefarm::tasks
