// FifoQueue (runtime/core/FifoQueue.hpp): the order and contents of a std::deque under
// random pushes and pops, through its compactions (a queue that never empties) and its
// resets (one that does).
#include "runtime/core/FifoQueue.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>

namespace treefarm::core {
namespace {

TEST(FifoQueue, KeepsTheOrderOfADequeThroughCompactionsAndResets) {
  std::mt19937_64 rng(15);
  std::uniform_real_distribution<double> u(0, 1);
  // The share of pushes: above one half the queue grows and never empties (compactions);
  // at one half it empties now and then (resets).
  for (const double push_share : {0.5, 0.52, 0.6}) {
    FifoQueue<std::string> q;
    std::deque<std::string> reference;
    std::uint64_t next = 0;
    for (int step = 0; step < 60000; ++step) {
      if (u(rng) < push_share) {
        // Past the short-string buffer: a moved-from entry left behind would show.
        std::string value = "entry number " + std::to_string(next++) + " of the queue under test";
        q.push_back(value);
        reference.push_back(value);
        ASSERT_EQ(q.back(), reference.back());
      } else if (!reference.empty()) {
        ASSERT_EQ(q.front(), reference.front()) << "push share " << push_share << ", step " << step;
        if (step % 2 == 0) {
          ASSERT_EQ(q.take_front(), reference.front());
        } else {
          q.pop_front();
        }
        reference.pop_front();
      }
      ASSERT_EQ(q.size(), reference.size());
      ASSERT_EQ(q.empty(), reference.empty());
    }
    while (!reference.empty()) {
      ASSERT_EQ(q.take_front(), reference.front());
      reference.pop_front();
    }
    EXPECT_TRUE(q.empty());
    q.push_back("after");
    EXPECT_EQ(q.front(), "after");
    q.clear();
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.size(), 0u);
  }
}

}  // namespace
}  // namespace treefarm::core
