#include "runtime/exec/Backfill.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

using treefarm::exec::Backfill;
using treefarm::exec::BackfillEntry;
using treefarm::exec::BackfillResources;
using treefarm::exec::backfill_balanced_objective;

TEST(Backfill, HeadStartsWhenItFits) {
  Backfill q;
  q.push(1, 2, 0);
  q.push(2, 1, 0);
  EXPECT_EQ(q.pick(2, 0, 2, 0), std::optional<std::size_t>(0));
  auto e = q.start_next(2, 0, 2, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->id, 1u);
  EXPECT_EQ(q.entries().front().bypass_count, 0u);
}

TEST(Backfill, NothingFitsGivesNothing) {
  Backfill q;
  q.push(1, 2, 0);
  q.push(2, 2, 0);
  EXPECT_FALSE(q.pick(1, 0, 2, 0));
  EXPECT_FALSE(Backfill().pick(2, 0, 2, 0));  // empty queue
}

TEST(Backfill, BypassIncrementsCountersAndBlocksLaterBypasses) {
  // lee2010 slide 13: head H needs both cores, one is busy.
  Backfill q;
  q.push(10, 2, 0);  // H
  q.push(11, 1, 0);
  q.push(12, 1, 0);
  auto first = q.start_next(1, 0, 2, 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id, 11u);  // tie in BB: nearer the head
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q.entries()[0].bypass_count, 1u);  // H was bypassed
  EXPECT_EQ(q.entries()[1].bypass_count, 0u);  // 12 was behind 11: not bypassed
  EXPECT_EQ(q.max_bypass_count(), 1u);
  // One core frees again: 12 fits but its BC 0 < max BC 1, so it must wait for H.
  EXPECT_FALSE(q.pick(1, 0, 2, 0));
  auto head = q.start_next(2, 0, 2, 0);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->id, 10u);
  EXPECT_EQ(head->bypass_count, 1u);
}

TEST(Backfill, BypassedTasksWithMaxCounterMayStillBackfill) {
  Backfill q;
  q.push(1, 4, 0);   // head, never fits below
  q.push(2, 1, 0);
  q.push(3, 1, 0);
  q.push(4, 1, 0);
  // Pick 4 out of order via take(): it bypasses 1, 2 and 3.
  EXPECT_EQ(q.take(3).id, 4u);
  for (const auto& e : q.entries()) EXPECT_EQ(e.bypass_count, 1u);
  q.push(5, 1, 0);  // BC 0: may not pass anyone now
  auto next = q.start_next(1, 0, 4, 0);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, 2u);  // BC 1 == max, fits
  EXPECT_EQ(q.entries()[0].bypass_count, 2u);
  EXPECT_EQ(q.entries()[1].bypass_count, 1u);  // task 3 was behind 2: unchanged
  // Now max BC is 2 (the head): 3 and 5 must wait.
  EXPECT_FALSE(q.pick(3, 0, 4, 0));
}

TEST(Backfill, BackfillBalancedObjectiveMatchesHandComputation) {
  // 4 cores, 100 bytes; 2 cores and 20 bytes busy.
  BackfillResources r{2, 80, 4, 100};
  // u_cores = 3/4, u_mem = 60/100: mean 0.675, BM = 0.75/0.675, FM = 0.325.
  double expected = (0.75 / 0.675) * 0.325;
  EXPECT_NEAR(backfill_balanced_objective({1, 1, 40, 0}, r), expected, 1e-12);
  // Cores only (memory not accounted): BM = 1, FM = 1 - u_cores.
  EXPECT_NEAR(backfill_balanced_objective({1, 1, 999, 0}, {1, 0, 4, 0}), 0.0, 1e-12);
  EXPECT_NEAR(backfill_balanced_objective({1, 1, 0, 0}, {3, 0, 4, 0}), 0.5, 1e-12);
}

TEST(Backfill, BackfillBalancedPicksTheBalancedCandidate) {
  Backfill q;
  q.push(1, 4, 0);   // head: needs the whole node
  q.push(2, 1, 10);  // u = (0.75, 0.30): BM 1.4286 FM 0.475 -> 0.679
  q.push(3, 1, 60);  // u = (0.75, 0.80): BM 1.0323 FM 0.225 -> 0.232  <- best
  q.push(4, 2, 0);   // u = (1.00, 0.20): BM 1.6667 FM 0.400 -> 0.667
  q.push(5, 1, 90);  // does not fit (80 bytes free)
  EXPECT_EQ(q.pick(2, 80, 4, 100), std::optional<std::size_t>(2));
  // Cores only: the candidate filling the node wins (FM = 0).
  EXPECT_EQ(q.pick(2, 80, 4, 0), std::optional<std::size_t>(3));
  auto e = q.start_next(2, 80, 4, 100);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->id, 3u);
  EXPECT_EQ(q.entries()[0].bypass_count, 1u);
  EXPECT_EQ(q.entries()[1].bypass_count, 1u);
  EXPECT_EQ(q.entries()[2].bypass_count, 0u);
}

TEST(Backfill, FifoModeNeverBypasses) {
  Backfill q(false);
  EXPECT_FALSE(q.backfill());
  q.push(1, 2, 0);
  q.push(2, 1, 0);
  EXPECT_FALSE(q.pick(1, 0, 2, 0));
  // A scripted mixed stream: every start is the head.
  Backfill fifo(false);
  std::uint32_t free = 4;
  std::vector<std::uint32_t> running;
  for (std::uint64_t id = 0; id < 200; ++id) {
    fifo.push(id, static_cast<std::uint32_t>(1 + (id * 7) % 4), 0);
    if (id % 3 == 2 && !running.empty()) {  // a completion every third arrival
      free += running.front();
      running.erase(running.begin());
    }
    while (auto idx = fifo.pick(free, 0, 4, 0)) {
      ASSERT_EQ(*idx, 0u);
      auto e = fifo.take(*idx);
      EXPECT_EQ(e.bypass_count, 0u);
      free -= e.cores;
      running.push_back(e.cores);
    }
  }
}

TEST(Backfill, MemoryIsAccountedOnlyWhenTotalIsNonZero) {
  Backfill q;
  q.push(1, 1, 500);
  EXPECT_FALSE(q.pick(1, 100, 1, 1000));
  EXPECT_EQ(q.pick(1, 100, 1, 0), std::optional<std::size_t>(0));
}

TEST(Backfill, BadArgumentsThrow) {
  Backfill q;
  EXPECT_THROW(q.push(1, 0, 0), std::invalid_argument);
  EXPECT_THROW(q.take(0), std::out_of_range);
}

namespace {

// Event-driven script: 2 cores; an endless stream of 1-core tasks of duration 1.0 whose
// completions are staggered by 0.5, so a core frees every 0.5 time units but both cores
// are never free at once unless the queue holds back. A 2-core task H waits at the head.
// Returns H's bypass count when it started, or nullopt if it had not started after
// `max_events` completions.
struct Running {
  double end;
  std::uint32_t cores;
};

template <class PickFn>
std::optional<std::uint32_t> run_stream(Backfill& q, PickFn pick, int max_events) {
  const std::uint64_t head_id = 1000000;
  std::uint64_t next_id = 0;
  std::uint32_t free = 2;
  std::vector<Running> running;
  double now = 0;
  // Task a0 starts at 0; H arrives; then a queue of 1-core tasks.
  q.push(next_id++, 1, 0);
  auto a0 = q.start_next(free, 0, 2, 0);
  free -= a0->cores;
  running.push_back({1.0, 1});
  now = 0.5;
  q.push(head_id, 2, 0);
  for (int i = 0; i < 5; ++i) q.push(next_id++, 1, 0);
  for (int event = 0; event < max_events; ++event) {
    while (auto idx = pick(q, free)) {
      BackfillEntry e = q.take(*idx);
      if (e.id == head_id) return e.bypass_count;
      free -= e.cores;
      running.push_back({now + 1.0, e.cores});
    }
    auto first = std::min_element(running.begin(), running.end(),
                                  [](const Running& a, const Running& b) { return a.end < b.end; });
    if (first == running.end()) return std::nullopt;
    now = first->end;
    free += first->cores;
    running.erase(first);
    q.push(next_id++, 1, 0);  // the stream never ends
  }
  return std::nullopt;
}

}  // namespace

TEST(Backfill, TwoCoreHeadIsNotStarvedByEndlessOneCoreStream) {
  Backfill q;
  auto bypasses = run_stream(
      q, [](const Backfill& b, std::uint32_t free) { return b.pick(free, 0, 2, 0); }, 1000);
  ASSERT_TRUE(bypasses) << "the 2-core head never started";
  // One task passes H (BC 0 == max 0); afterwards H holds the max BC and only it may start.
  EXPECT_EQ(*bypasses, 1u);
}

TEST(Backfill, GreedyBackfillWithoutCountersWouldStarveTheHead) {
  // The same script with a backfill that ignores BC: shows the script really exercises
  // starvation, so the test above could fail.
  Backfill q;
  auto greedy = [](const Backfill& b, std::uint32_t free) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (b.entries()[i].cores <= free) return i;
    }
    return std::nullopt;
  };
  EXPECT_FALSE(run_stream(q, greedy, 1000));
}

TEST(Backfill, MigratedTaskKeepsItsCounterAndLeavingCountsNoBypass) {
  // lee2010 slide 15: a task moved between nodes keeps its BC, and the node it left
  // was not bypassed by it.
  Backfill from;
  from.push(1, 2, 0);
  from.push(2, 1, 0);
  from.push(3, 1, 0);
  const BackfillEntry moved = from.remove(2);
  EXPECT_EQ(moved.id, 3u);
  EXPECT_EQ(from.entries()[0].bypass_count, 0u);
  EXPECT_EQ(from.entries()[1].bypass_count, 0u);
  EXPECT_THROW(from.remove(5), std::out_of_range);

  Backfill to;
  to.push(BackfillEntry{7, 1, 0, 3});
  EXPECT_EQ(to.max_bypass_count(), 3u);
  EXPECT_EQ(to.entries().front().bypass_count, 3u);
  EXPECT_THROW(to.push(BackfillEntry{8, 0, 0, 1}), std::invalid_argument);
}
