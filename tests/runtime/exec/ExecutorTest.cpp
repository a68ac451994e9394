#include "runtime/exec/Executor.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <oneapi/tbb/parallel_for.h>

#include "runtime/exec/Topology.hpp"

using namespace treefarm::exec;
using namespace std::chrono_literals;

namespace {

std::vector<int> usable_cores() { return discover_topology().cores; }

std::vector<int> affinity_of_this_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<int> cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  return cpus;
}

void spin_for(std::chrono::milliseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Collects finished tasks until `n` have arrived or `timeout` passes, waiting on notify_fd.
std::vector<ExecDone> wait_done(Executor& ex, std::size_t n, std::chrono::milliseconds timeout = 20s) {
  std::vector<ExecDone> all;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
    pollfd p{ex.notify_fd(), POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      for (auto& d : ex.poll_done()) all.push_back(std::move(d));
    }
  }
  return all;
}

}  // namespace

TEST(Executor, EveryTaskCompletesExactlyOnce) {
  auto cores = usable_cores();
  Executor ex({cores, 0, true, true});
  EXPECT_EQ(ex.total_cores(), cores.size());
  const std::uint64_t n = 300;
  std::atomic<int> calls{0};
  for (std::uint64_t id = 0; id < n; ++id) {
    std::uint32_t c = (id % 5 == 0) ? static_cast<std::uint32_t>(cores.size()) : 1;
    ex.submit({id, c, 0, [&calls](TaskContext& ctx) {
                 ++calls;
                 tbb::parallel_for(0, 64, [](int) { spin_for(0ms); });
                 (void)ctx;
               }});
  }
  auto done = wait_done(ex, n);
  ASSERT_EQ(done.size(), n);
  std::map<std::uint64_t, int> seen;
  for (const auto& d : done) {
    ++seen[d.id];
    EXPECT_FALSE(d.error);
    EXPECT_GE(d.queued_seconds, 0);
    EXPECT_GE(d.run_seconds, 0);
    EXPECT_EQ(d.cores.size(), d.id % 5 == 0 ? cores.size() : 1u);
  }
  EXPECT_EQ(seen.size(), n);
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << "task " << id;
  EXPECT_EQ(calls.load(), static_cast<int>(n));
  EXPECT_EQ(ex.running(), 0u);
  EXPECT_EQ(ex.queued(), 0u);
  EXPECT_EQ(ex.free_cores(), ex.total_cores());
  EXPECT_TRUE(ex.poll_done().empty());
}

TEST(Executor, OneCoreTaskIsPinnedToExactlyItsCore) {
  auto cores = usable_cores();
  Executor ex({cores, 0, true, true});
  std::mutex mu;
  std::map<std::uint64_t, std::pair<std::vector<int>, std::vector<int>>> seen;  // id -> (ctx, mask)
  std::map<std::uint64_t, std::set<std::vector<int>>> arena_masks;
  const std::uint64_t n = 4 * cores.size();
  for (std::uint64_t id = 0; id < n; ++id) {
    ex.submit({id, 1, 0, [&, id](TaskContext& ctx) {
                 auto mask = affinity_of_this_thread();
                 std::set<std::vector<int>> in_arena;
                 ctx.arena().execute([&] {
                   tbb::parallel_for(0, 16, [&](int) {
                     auto m = affinity_of_this_thread();
                     std::lock_guard lk(mu);
                     in_arena.insert(m);
                   });
                 });
                 std::lock_guard lk(mu);
                 seen[id] = {ctx.cores(), mask};
                 arena_masks[id] = in_arena;
               }});
  }
  ASSERT_EQ(wait_done(ex, n).size(), n);
  ASSERT_EQ(seen.size(), n);
  for (const auto& [id, v] : seen) {
    ASSERT_EQ(v.first.size(), 1u);
    EXPECT_EQ(v.second, v.first) << "task " << id << " thread mask differs from its core";
    EXPECT_EQ(arena_masks[id], std::set<std::vector<int>>{v.first}) << "task " << id;
  }
}

// On a CPU set shared with other nodes (shared_cpus) the executor runs as many tasks as it
// has slots but does not pin them: each task's thread may run on the whole set.
TEST(Executor, OnASharedSetTaskThreadsAreNotPinned) {
  auto cores = usable_cores();
  if (cores.size() < 2) GTEST_SKIP() << "needs >= 2 usable cores, the process has " << cores.size();
  ExecutorConfig config{{cores.front()}, 0, true, true, cores};
  Executor ex(config);
  EXPECT_EQ(ex.total_cores(), 1u);
  std::mutex mu;
  std::vector<std::vector<int>> masks;
  const std::uint64_t n = 4;
  for (std::uint64_t id = 0; id < n; ++id)
    ex.submit({id, 1, 0, [&](TaskContext&) {
                 auto mask = affinity_of_this_thread();
                 std::lock_guard lk(mu);
                 masks.push_back(mask);
               }});
  ASSERT_EQ(wait_done(ex, n).size(), n);
  ASSERT_EQ(masks.size(), n);
  for (const auto& m : masks) EXPECT_EQ(m, cores) << "a task's thread was bound to fewer CPUs than the shared set";
}

TEST(Executor, TwoCoreTaskArenaRunsOnTwoDistinctPinnedCores) {
  auto cores = usable_cores();
  if (cores.size() < 2) GTEST_SKIP() << "needs >= 2 usable cores, the process has " << cores.size();
  std::vector<int> two(cores.begin(), cores.begin() + 2);
  Executor ex({two, 0, true, true});
  std::mutex mu;
  std::set<int> cpus;
  std::set<std::vector<int>> masks;
  std::vector<int> ctx_cores;
  ex.submit({7, 2, 0, [&](TaskContext& ctx) {
               ctx_cores = ctx.cores();
               ctx.arena().execute([&] {
                 tbb::parallel_for(0, 8, 1, [&](int) {
                   spin_for(20ms);
                   int cpu = sched_getcpu();
                   auto m = affinity_of_this_thread();
                   std::lock_guard lk(mu);
                   cpus.insert(cpu);
                   masks.insert(m);
                 }, tbb::simple_partitioner{});
               });
             }});
  auto done = wait_done(ex, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].error);
  EXPECT_EQ(std::set<int>(ctx_cores.begin(), ctx_cores.end()), std::set<int>(two.begin(), two.end()));
  EXPECT_EQ(cpus, std::set<int>(two.begin(), two.end()));
  // Each participating thread is pinned to exactly one of the task's cores.
  std::set<std::vector<int>> expected;
  for (int c : two) expected.insert({c});
  EXPECT_EQ(masks, expected);
}

TEST(Executor, RejectsTasksThatCanNeverFit) {
  Executor ex({{usable_cores().front()}, 1000, true, true});
  auto noop = [](TaskContext&) {};
  EXPECT_THROW(ex.submit({1, 2, 0, noop}), std::invalid_argument);
  EXPECT_THROW(ex.submit({1, 0, 0, noop}), std::invalid_argument);
  EXPECT_THROW(ex.submit({1, 1, 1001, noop}), std::invalid_argument);
  EXPECT_THROW(ex.submit({1, 1, 0, nullptr}), std::invalid_argument);
  EXPECT_EQ(ex.queued(), 0u);
}

TEST(Executor, RejectsBadConfig) {
  EXPECT_THROW(Executor({{}, 0, true, true}), std::invalid_argument);
  EXPECT_THROW(Executor({{0, 0}, 0, true, false}), std::invalid_argument);
}

TEST(Executor, ExceptionInRunIsReported) {
  Executor ex({{usable_cores().front()}, 0, true, true});
  ex.submit({42, 1, 0, [](TaskContext&) { throw std::runtime_error("boom"); }});
  ex.submit({43, 1, 0, [](TaskContext&) {}});
  auto done = wait_done(ex, 2);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& d : done) {
    if (d.id == 42) {
      ASSERT_TRUE(d.error);
      try {
        std::rethrow_exception(d.error);
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "boom");
      }
    } else {
      EXPECT_FALSE(d.error);
    }
  }
}

TEST(Executor, ATasksCpuIsItsThreadsNotItsWaits) {
  // A task that sleeps uses (almost) no CPU; one that computes uses what it computed: the
  // CPU is the task thread's own, not its run time (the a-posteriori node rows,
  // docs/live-model.md). Neither figure depends on the machine's load.
  Executor ex({{usable_cores().front()}, 0, true, true});
  ex.submit({1, 1, 0, [](TaskContext&) { std::this_thread::sleep_for(200ms); }});
  ex.submit({2, 1, 0, [](TaskContext&) {
               const double until = thread_cpu_seconds() + 0.05;
               while (thread_cpu_seconds() < until) {
               }
             }});
  auto done = wait_done(ex, 2);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& d : done) {
    if (d.id == 1) {
      EXPECT_GE(d.run_seconds, 0.19);
      EXPECT_LT(d.cpu_seconds, 0.02) << "a sleep is no CPU";
    } else {
      EXPECT_GE(d.cpu_seconds, 0.05);
      EXPECT_GE(d.run_seconds + 1e-6, d.cpu_seconds) << "one thread uses at most its run time";
    }
  }
}

TEST(Executor, NotifyFdIsReadableOnlyWhileResultsWait) {
  Executor ex({{usable_cores().front()}, 0, true, true});
  pollfd p{ex.notify_fd(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);
  ex.submit({1, 1, 0, [](TaskContext&) {}});
  p.revents = 0;
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  EXPECT_TRUE(p.revents & POLLIN);
  auto done = ex.poll_done();
  ASSERT_EQ(done.size(), 1u);
  p.revents = 0;
  EXPECT_EQ(poll(&p, 1, 0), 0);
}

// Fake core labels with pin = false: exercises the queue discipline without needing as
// many real PUs (so it also runs under `taskset -c 0`).
namespace {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
};

// Blocker (1 core) holds one of two cores; then H (2 cores) and X (1 core) arrive.
// Returns the ids in start order.
std::vector<std::uint64_t> start_order(bool backfill) {
  Executor ex({{100, 101}, 0, backfill, false});
  std::mutex mu;
  std::vector<std::uint64_t> order;
  Gate gate;
  auto record = [&](std::uint64_t id) {
    std::lock_guard lk(mu);
    order.push_back(id);
  };
  std::atomic<bool> blocker_started{false};
  ex.submit({1, 1, 0, [&](TaskContext&) {
               record(1);
               blocker_started = true;
               gate.wait();
             }});
  while (!blocker_started) std::this_thread::yield();
  ex.submit({2, 2, 0, [&](TaskContext&) { record(2); }});
  ex.submit({3, 1, 0, [&](TaskContext&) { record(3); }});
  if (backfill) {
    // X may overtake H while the blocker runs.
    auto done = wait_done(ex, 1, 5s);
    EXPECT_EQ(done.size(), 1u);
    EXPECT_EQ(ex.queued(), 1u);
  } else {
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(ex.queued(), 2u);
  }
  gate.release();
  wait_done(ex, backfill ? 2 : 3, 5s);
  std::lock_guard lk(mu);
  return order;
}

}  // namespace

TEST(Executor, BackfillLetsASmallTaskOvertakeABlockedHead) {
  EXPECT_EQ(start_order(true), (std::vector<std::uint64_t>{1, 3, 2}));
}

TEST(Executor, FifoModeKeepsSubmissionOrder) {
  EXPECT_EQ(start_order(false), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(Executor, MemoryIsHeldWhileATaskRuns) {
  Executor ex({{100, 101}, 100, true, false});
  std::atomic<int> now{0};
  std::atomic<int> peak{0};
  auto body = [&](TaskContext&) {
    int v = ++now;
    int p = peak.load();
    while (v > p && !peak.compare_exchange_weak(p, v)) {
    }
    std::this_thread::sleep_for(30ms);
    --now;
  };
  for (std::uint64_t id = 0; id < 4; ++id) ex.submit({id, 1, 60, body});
  ASSERT_EQ(wait_done(ex, 4).size(), 4u);
  EXPECT_EQ(peak.load(), 1);  // 2 × 60 bytes > 100: never two at once despite 2 free cores
  for (std::uint64_t id = 0; id < 4; ++id) ex.submit({id, 1, 40, body});
  ASSERT_EQ(wait_done(ex, 4).size(), 4u);
  EXPECT_EQ(peak.load(), 2);  // 2 × 40 bytes fit
}

TEST(Executor, DestructorWaitsForRunningTasks) {
  std::atomic<bool> finished{false};
  {
    Executor ex({{usable_cores().front()}, 0, true, true});
    ex.submit({1, 1, 0, [&](TaskContext&) {
                 std::this_thread::sleep_for(100ms);
                 finished = true;
               }});
    while (ex.running() != 1) std::this_thread::yield();
  }
  EXPECT_TRUE(finished.load());
}
