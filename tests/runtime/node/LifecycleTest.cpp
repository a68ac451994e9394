// The node's phases as one table: the transitions a node goes through, and a trigger the
// table does not allow is refused with the trigger and the phase named.
#include "runtime/node/Lifecycle.hpp"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace treefarm::node {
namespace {

TEST(Lifecycle, AWorkerJoinsRunsClosesAndEnds) {
  Lifecycle l;
  EXPECT_TRUE(l.is(Phase::joining));
  l.fire(Trigger::configured);
  EXPECT_TRUE(l.is(Phase::running));
  l.fire(Trigger::close);
  EXPECT_TRUE(l.is(Phase::closing));
  l.fire(Trigger::end);
  EXPECT_TRUE(l.is(Phase::done));
  EXPECT_FALSE(l.allows(Trigger::close)) << "a node that ended does not close again";
}

TEST(Lifecycle, ALostParentIsRejoinedThroughTheWaitAndTheJoin) {
  Lifecycle l;
  l.fire(Trigger::welcomed_measuring);
  EXPECT_TRUE(l.is(Phase::measuring));
  l.fire(Trigger::parent_lost);
  EXPECT_TRUE(l.is(Phase::rejoin_wait));
  EXPECT_FALSE(l.allows(Trigger::configured)) << "a Welcome comes only after a new Hello";
  l.fire(Trigger::rejoin);
  EXPECT_TRUE(l.is(Phase::joining));
  l.fire(Trigger::configured);
  EXPECT_TRUE(l.is(Phase::running));
}

TEST(Lifecycle, AnUnexpectedTriggerNamesItselfAndThePhase) {
  Lifecycle l;
  l.fire(Trigger::configured);
  try {
    l.fire(Trigger::rejoin);
    FAIL() << "rejoin while running was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("'rejoin'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'running'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(l.is(Phase::running)) << "a refused trigger leaves the phase as it was";
}

}  // namespace
}  // namespace treefarm::node
