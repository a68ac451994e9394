// lab/campaign/ProcessPool: a stop request (the campaign's SIGINT/SIGTERM) starts no more
// children, ends the running ones (even though they inherit a handler that would ignore
// the signal) and reports them as stopped; children that ended on their own keep their
// answers.
#include "lab/campaign/ProcessPool.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <map>
#include <thread>

using treefarm::lab::campaign::ProcessOutcome;
using treefarm::lab::campaign::ProcessPool;

namespace {
std::atomic<bool> parent_saw_signal{false};
void note_signal(int) { parent_saw_signal = true; }
}  // namespace

TEST(ProcessPool, StopEndsTheRunningChildrenAndStartsNoMore) {
  // The parent handles SIGTERM as treefarm's main does (sets a flag): a child that kept
  // that handler would ignore the pool's SIGTERM and run its minute out.
  const auto old = std::signal(SIGTERM, note_signal);
  const ProcessPool pool(2, 0);
  std::atomic<bool> stop{false};
  std::map<std::size_t, ProcessOutcome> ended;
  std::size_t prepared = 0;
  std::thread stopper;
  pool.run(
      10,
      [&](std::size_t i) -> ProcessPool::Work {
        ++prepared;
        if (i < 2) return [] { return std::string("quick"); };
        if (i == 3 && !stopper.joinable())  // children 2 and 3 are running: stop now
          stopper = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            stop = true;
          });
        return [] {
          ::sleep(60);
          return std::string("slow");
        };
      },
      [&](std::size_t i, const ProcessOutcome& o) { ended[i] = o; }, &stop);
  if (stopper.joinable()) stopper.join();
  std::signal(SIGTERM, old);
  EXPECT_FALSE(parent_saw_signal.load()) << "the pool signals its children, not itself";
  EXPECT_EQ(prepared, 4u) << "no child is started after the stop";
  ASSERT_EQ(ended.size(), 4u);
  for (std::size_t i : {0u, 1u}) {
    EXPECT_FALSE(ended[i].stopped) << i;
    EXPECT_EQ(ended[i].output, "quick") << i;
  }
  for (std::size_t i : {2u, 3u}) {
    EXPECT_TRUE(ended[i].stopped) << i;
    EXPECT_TRUE(WIFSIGNALED(ended[i].status)) << i;
    EXPECT_EQ(WTERMSIG(ended[i].status), SIGTERM) << i << ": SIGTERM at its default, not SIGKILL after 2 s";
    EXPECT_EQ(ended[i].output, "") << i;
  }
}
