// The policy registry (runtime/core/Policy.cpp): the one list of policy names.
#include "runtime/core/Policy.hpp"

#include <set>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace treefarm::core {
namespace {

TEST(PolicyRegistry, NamesAreThePapersInItsOrder) {
  EXPECT_EQ(policy_names(), (std::vector<std::string>{"fcfs", "cgbc", "pbc", "lp", "data-centric", "price"}));
}

TEST(PolicyRegistry, EveryNameMakesThePolicyOfThatName) {
  std::set<std::string> seen;
  for (const auto& name : policy_names()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(is_policy_name(name));
    const auto policy = make_policy(name);
    ASSERT_NE(policy, nullptr);
    EXPECT_EQ(policy->name(), name);
    EXPECT_TRUE(seen.insert(name).second) << "listed twice";
  }
}

// The core's end-of-bag take-back reasons with the node's plan only under a policy that
// follows it: lp alone (data-centric and price make their own rates).
TEST(PolicyRegistry, OnlyLpFollowsTheNodesPlan) {
  for (const auto& name : policy_names()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(make_policy(name)->follows_plan(), name == "lp");
  }
}

TEST(PolicyRegistry, UnknownNameIsRejectedListingTheKnownOnes) {
  EXPECT_FALSE(is_policy_name("FCFS"));  // names are case-sensitive
  EXPECT_FALSE(is_policy_name(""));
  EXPECT_THAT([] { (void)make_policy("round-robin"); },
              testing::ThrowsMessage<std::invalid_argument>(testing::HasSubstr(
                  "unknown policy 'round-robin' (known: fcfs, cgbc, pbc, lp, data-centric, price)")));
}

}  // namespace
}  // namespace treefarm::core
