// Applications from several masters (papers/bertin2008 §2.2): the max-min LP and the Ipopt
// fairness optimum route each application from its own origin down the tree re-rooted
// there, a link having one capacity per direction ((P_i → P_j) in constraint (3)).
// Checked against closed forms.
#include <gtest/gtest.h>

#include "runtime/lp/FairnessOptimum.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "tests/runtime/lp/TestPlatforms.hpp"

namespace treefarm::lp {
namespace {

using testing::Builder;
using testing::inf;

const auto proportional = FairnessObjective::parse("proportional");

// A (10 tasks/s) over B (5 tasks/s), a link of 2 tasks/s. From A: 10 + 2; from B the
// tasks climb to A: 5 + 2.
PlatformModel chain(std::size_t origin, model::CommModel comm) {
  Builder b;
  b.app("k", 1000).comm(comm);
  b.node("A", -1, 1, inf, {0.1});
  b.node("B", 0, 1, 2000, {0.2});
  b.m.apps[0].origin = origin;
  return b.m;
}

TEST(Origins, OneApplicationFromALeafClimbsTheLink) {
  for (const auto comm : {model::CommModel::multi_port, model::CommModel::one_port}) {
    const auto from_root = chain(0, comm);
    const auto from_leaf = chain(1, comm);
    EXPECT_NEAR(solve(from_root).app_throughput[0], 12.0, 1e-6);
    const auto lp = solve(from_leaf);
    EXPECT_NEAR(lp.app_throughput[0], 7.0, 1e-6);
    EXPECT_NEAR(lp.alpha[0][0], 2.0, 1e-6) << "A computes what the link carries up";
    EXPECT_NEAR(lp.sent[1][0], 2.0, 1e-6) << "sent of B is its flow up to A";
    // One application: the proportional optimum is the largest throughput (Ipopt = Clp).
    EXPECT_NEAR(solve_fairness(from_leaf, proportional).app_throughput[0], 7.0, 1e-5);
  }
}

TEST(Origins, MastersOnTwoLeavesMatchTheClosedForm) {
  // A only forwards; B computes 1 task/s, C 10; app1 from B, app2 from C, links 2
  // tasks/s. Proportional: app1 takes B whole and 2 tasks/s of C (the link's bound, as
  // 1/3 > 1/8 there), app2 the rest of C: (3, 8).
  Builder b;
  b.app("app1", 1000).app("app2", 1000).comm(model::CommModel::multi_port);
  b.node("A", -1, 0, inf, {inf, inf});
  b.node("B", 0, 1, 2000, {1.0, 1.0});
  b.node("C", 0, 1, 2000, {0.1, 0.1});
  b.m.apps[0].origin = 1;
  b.m.apps[1].origin = 2;
  const auto s = solve_fairness(b.m, proportional);
  EXPECT_NEAR(s.app_throughput[0], 3.0, 1e-4);
  EXPECT_NEAR(s.app_throughput[1], 8.0, 1e-4);
  EXPECT_NEAR(s.alpha[2][0], 2.0, 1e-4);
  EXPECT_NEAR(s.alpha[1][1], 0.0, 1e-4) << "app2 has no reason to use the slow B";
}

TEST(Origins, EachDirectionOfALinkHasItsOwnCapacity) {
  // app1 from B runs only on C, app2 from C only on B: both cross A's two links, in
  // opposite directions. 2 tasks/s each way: 2 each (one shared capacity would give 1).
  Builder b;
  b.app("app1", 1000).app("app2", 1000).comm(model::CommModel::multi_port);
  b.node("A", -1, 0, inf, {inf, inf});
  b.node("B", 0, 1, 2000, {inf, 0.1});
  b.node("C", 0, 1, 2000, {0.1, inf});
  b.m.apps[0].origin = 1;
  b.m.apps[1].origin = 2;
  const auto lp = solve(b.m);
  EXPECT_NEAR(lp.fair_throughput, 2.0, 1e-6);
  const auto s = solve_fairness(b.m, proportional);
  EXPECT_NEAR(s.app_throughput[0], 2.0, 1e-4);
  EXPECT_NEAR(s.app_throughput[1], 2.0, 1e-4);
  // One-port: B's port sends app1 up and nothing else, A's sends app1 down to C and app2
  // down to B: A's port is the bound, 2·(0.5 s) per unit → 1 each.
  b.m.comm_model = model::CommModel::one_port;
  EXPECT_NEAR(solve(b.m).fair_throughput, 1.0, 1e-6);
}

TEST(Origins, AnOriginOutsideTheTreeIsRefused) {
  auto m = chain(0, model::CommModel::multi_port);
  m.apps[0].origin = 5;
  EXPECT_THROW(validate(m), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::lp
