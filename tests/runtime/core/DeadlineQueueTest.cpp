// DeadlineQueue (runtime/core/DeadlineQueue.hpp): earliest first, in exactly the order of
// a std::set of (deadline, task) pairs, whatever order the deadlines are pushed in.
#include "runtime/core/DeadlineQueue.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace treefarm::core {
namespace {

TEST(DeadlineQueue, PopsInTheOrderOfASetUnderMostlyMonotoneAndRandomPushes) {
  std::mt19937_64 rng(14);
  for (const double disorder : {0.0, 0.1, 1.0}) {  // share of pushes earlier than the last
    DeadlineQueue q;
    std::set<DeadlineQueue::Entry> reference;
    double now = 0;
    std::uint64_t next_id = 0;
    std::uniform_real_distribution<double> u(0, 1);
    for (int step = 0; step < 20000; ++step) {
      if (u(rng) < 0.55) {
        now += u(rng);
        // Equal deadlines too (a fixed floor): ties are broken by the task id.
        const double deadline = u(rng) < disorder ? now - 5 * u(rng) : (u(rng) < 0.3 ? std::floor(now) + 10 : now + 10);
        const TaskId id{next_id++ % 5000};  // ids come back, as tasks are re-sent
        q.push(deadline, id);
        reference.emplace(deadline, id);
      } else if (!reference.empty()) {
        ASSERT_EQ(q.top(), *reference.begin()) << "disorder " << disorder << ", step " << step;
        q.pop();
        reference.erase(reference.begin());
      }
      ASSERT_EQ(q.size(), reference.size());
    }
    while (!reference.empty()) {
      ASSERT_EQ(q.top(), *reference.begin());
      q.pop();
      reference.erase(reference.begin());
    }
    EXPECT_TRUE(q.empty());
  }
}

}  // namespace
}  // namespace treefarm::core
