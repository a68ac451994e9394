// The driver's deadlines: each armed or not, never a -1 meaning "unset"; take() fires a
// due timer once.
#include "runtime/node/Timers.hpp"

#include <gtest/gtest.h>

namespace treefarm::node {
namespace {

TEST(Timers, AnUnarmedTimerIsNeverDueNotEvenAtTimeZeroOrBefore) {
  Timers t;
  EXPECT_FALSE(t.due(Timer::join, 0));
  EXPECT_FALSE(t.due(Timer::join, -5)) << "a negative time is a time, not 'unset'";
  t.arm(Timer::join, -1);
  EXPECT_TRUE(t.due(Timer::join, -1)) << "-1 is a deadline like any other";
}

TEST(Timers, TakeFiresADueTimerOnce) {
  Timers t;
  t.arm(Timer::heartbeat, 2);
  EXPECT_FALSE(t.take(Timer::heartbeat, 1.5));
  EXPECT_TRUE(t.take(Timer::heartbeat, 2));
  EXPECT_FALSE(t.take(Timer::heartbeat, 3)) << "taken: disarmed";
  EXPECT_FALSE(t.armed(Timer::heartbeat));
}

TEST(Timers, EarliestSkipsUnarmedTimers) {
  Timers t;
  EXPECT_FALSE(t.earliest(Timer::tick, std::nullopt).has_value());
  t.arm(Timer::tick, 7);
  t.arm(Timer::closing, 3);
  EXPECT_EQ(t.earliest(Timer::tick, std::nullopt), 7.0);
  EXPECT_EQ(t.earliest(Timer::closing, t.earliest(Timer::tick, std::nullopt)), 3.0);
  EXPECT_EQ(t.earliest(Timer::join, 5.0), 5.0);
  t.disarm(Timer::closing);
  EXPECT_EQ(t.earliest(Timer::closing, 9.0), 9.0);
}

}  // namespace
}  // namespace treefarm::node
