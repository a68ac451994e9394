// Latency in the model (docs/lp.md "Latency"): on a star whose links have a
// 1 s latency, the lp policy reaches at least 0.95 of the LP optimum that counts the
// buffer's round trip (and the one-port's hold), and never exceeds it.
#include <gtest/gtest.h>

#include <string>

#include "runtime/lp/SteadyState.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::sim {
namespace {

using test::experiment;
using test_support::small_star_toml;
using test_support::synthetic_app_toml;

// Two workers of 10 tasks/s (100 Mflop on 1 Gflop/s), 1 MB tasks on 100 MB/s links
// (0.01 s) of 1 s latency, buffer 10. The paper's LP: 20 tasks/s. With the latency,
// one-port: the port is busy 1 s + 0.01 s per task: 0.990 tasks/s in all.
// Multi-port: the LP's buffer row binds at 2 × 10 / 2.01 = 9.95 tasks/s. (The simulated
// lp policy reached 0.999 tasks/s until every mailbox had a permanent receiver: with one
// get posted at a time, each request and result crossed its 1 s link after the previous.)
std::string latency_star(const char* comm_model, int tasks) {
  return small_star_toml({{"w1", "1Gf", "100MBps", "1s"},
                          {"w2", "1Gf", "100MBps", "1s"}}) +
         synthetic_app_toml("a", "1MB", "100Mf", static_cast<std::uint64_t>(tasks)) +
         "[run]\nbuffer = 10\npolicy = \"lp\"\ncomm_model = \"" + comm_model + "\"\n";
}

void expect_lp_reaches_the_latency_optimum(const char* comm_model, int tasks, double optimum) {
  const auto p = make_sim_platform(experiment(latency_star(comm_model, tasks)));
  const double lp = lp::solve(p.model).fair_throughput;
  EXPECT_NEAR(lp, optimum, 1e-3 * optimum) << comm_model;
  const auto o = simulate(p);
  ASSERT_TRUE(o.completed) << comm_model << ": " << o.error;
  ASSERT_TRUE(o.results.predicted_fair_throughput);
  EXPECT_NEAR(*o.results.predicted_fair_throughput, lp, 1e-9);
  const double ratio = o.results.fair_throughput / lp;
  EXPECT_GE(ratio, 0.95) << comm_model << ": simulated " << o.results.fair_throughput << " tasks/s, LP " << lp;
  EXPECT_LE(ratio, 1.03) << comm_model << ": simulated " << o.results.fair_throughput << " tasks/s, LP " << lp;
}

TEST(SimLatency, LpPolicyReachesTheOnePortHoldOptimumOnAOneSecondStar) {
  expect_lp_reaches_the_latency_optimum("one-port", 150, 1 / 1.01);
}

TEST(SimLatency, LpPolicyReachesTheMultiPortBufferOptimumOnAOneSecondStar) {
  expect_lp_reaches_the_latency_optimum("multi-port", 600, 2 * 10 / 2.01);
}

// A transfer the buffer cannot overlap (docs/lp.md "The buffer against the round trip"):
// one worker of 1 Gflop/s on a 100 MB/s link runs "short" (5 Mflop: 0.005 s, 1 MB: 0.01 s)
// and "long" (500 Mflop: 0.5 s, 25 MB: 0.25 s), weights 10 and 1. The paper's LP is
// CPU-bound: 1 / (10 · 0.005 + 0.5) = 1.818 tasks/s per weight. With B = 4 the link brings
// N = 11 tasks from one long task to the next, more than B: while a long task runs the
// full buffer asks for nothing, the next long one is requested after it and its 0.25 s
// come on top; the link idles during the long task: T · (0.5 + 10 · 0.01 + 0.25) <= 1,
// 1 / 0.85 = 1.176. With B = 16 the next long task is buffered during the current one:
// the CPU-bound 1.818 again. The simulated lp policy reaches each.
std::string long_and_short(int buffer) {
  return small_star_toml({{"w", "1Gf", "100MBps"}}) +
         synthetic_app_toml("short", "1MB", "5Mf", 600, "weight = 10\n") +
         synthetic_app_toml("long", "25MB", "500Mf", 60, "weight = 1\n") +
         "[run]\npolicy = \"lp\"\ncomm_model = \"multi-port\"\nbuffer = " + std::to_string(buffer) + "\n";
}

void expect_lp_reaches(int buffer, double optimum) {
  const auto p = make_sim_platform(experiment(long_and_short(buffer)));
  const double lp = lp::solve(p.model).fair_throughput;
  EXPECT_NEAR(lp, optimum, 1e-3 * optimum) << "B = " << buffer;
  const auto o = simulate(p);
  ASSERT_TRUE(o.completed) << o.error;
  const double ratio = o.results.fair_throughput / lp;
  EXPECT_GE(ratio, 0.95) << "B = " << buffer << ": simulated " << o.results.fair_throughput << " tasks/s, LP " << lp;
  EXPECT_LE(ratio, 1.05) << "B = " << buffer << ": simulated " << o.results.fair_throughput << " tasks/s, LP " << lp;
}

TEST(SimLatency, ABufferShorterThanThePlansCycleLeavesTheLongTransferUnoverlapped) {
  expect_lp_reaches(4, 1 / 0.85);
}

TEST(SimLatency, ABufferHoldingThePlansCycleOverlapsTheLongTransfer) { expect_lp_reaches(16, 1 / 0.55); }

}  // namespace
}  // namespace treefarm::sim
