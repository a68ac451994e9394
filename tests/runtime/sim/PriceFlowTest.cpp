// The tasks of a SimGrid run under `price` follow its agents' rates (papers/bertin2008 §4;
// docs/results/price.md, "The tasks follow the rates in SimGrid"): on the paper's
// platform each application's measured throughput reaches the proportional-fair optimum
// (Ipopt), before and after a node slows down during the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/lp/FairnessOptimum.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"

namespace treefarm::sim {
namespace {

using test::every_task_once;
using test::experiment;

// examples/bertin2008.toml (its tree and [policy.price]) with 4,000 tasks per application;
// `speed_c` is node C's speed (flop/s); `events` is appended.
std::string bertin(int speed_c, const std::string& events = "") {
  return R"(
[run]
comm_model = "multi-port"
policy = "price"
[policy.price]
relative_gain = 0.5
relative_price_gain = 0.1
gamma_rho_tilde = 0.2
gamma_rho1 = 0.15
[[node]]
name = "A"
cores = 1
speed = 10000
[[node]]
name = "B"
parent = "A"
cores = 1
speed = 10000
bandwidth = 10000
[[node]]
name = "C"
parent = "A"
cores = 1
speed = )" + std::to_string(speed_c) + R"(
bandwidth = 10000
[[node]]
name = "D"
parent = "C"
cores = 1
speed = 10000
bandwidth = 10000
[[node]]
name = "E"
parent = "C"
cores = 1
speed = 10000
bandwidth = 10000
[[app]]
name = "app1"
bytes = 1000
flops = 5000
tasks = 4000
[[app]]
name = "app2"
bytes = 2000
flops = 800
tasks = 4000
[[app]]
name = "app3"
bytes = 1500
flops = 1500
tasks = 4000
)" + events;
}

std::vector<double> proportional_optimum(const std::string& toml) {
  const auto s = lp::solve_fairness(lp::model_from_experiment(experiment(toml)), lp::FairnessObjective::parse("proportional"));
  return s.app_throughput;
}

// Completions per second of each application in [from, to) seconds.
std::vector<double> rates(const metrics::RunResults& r, std::size_t apps, double from, double to) {
  std::vector<double> n(apps, 0.0);
  for (const auto& t : r.tasks)
    if (t.completed_at >= from && t.completed_at < to) n.at(t.app) += 1;
  for (auto& x : n) x /= to - from;
  return n;
}

// The first time an application had `fraction` of its tasks completed: the steady part of
// the run ends there (the bags run out one after the other).
double first_bag_nearly_done(const metrics::RunResults& r, std::size_t apps, double fraction) {
  std::vector<std::vector<double>> done(apps);
  for (const auto& t : r.tasks) done.at(t.app).push_back(t.completed_at);
  double end = 1e300;
  for (auto& d : done) {
    std::sort(d.begin(), d.end());
    end = std::min(end, d.at(static_cast<std::size_t>(fraction * static_cast<double>(d.size() - 1))));
  }
  return end;
}

TEST(PriceFlow, EachApplicationReachesTheProportionalOptimumOnThePapersPlatform) {
  const auto toml = bertin(10000);
  const auto optimum = proportional_optimum(toml);  // (5, 12.5, 10) tasks/s
  const auto out = test::run(toml);
  ASSERT_TRUE(out.completed) << out.error;
  EXPECT_TRUE(every_task_once(experiment(toml), out.results));
  const double end = first_bag_nearly_done(out.results, 3, 0.9);
  ASSERT_GT(end, 200.0);
  // app1 gets 0.48 of its share here if the links are learnt at a fraction of their
  // bandwidth, the root stocks the wrong applications or prices eat 16% of the links.
  const auto measured = rates(out.results, 3, 100.0, end);  // the agents settle in ~100 updates
  for (std::size_t k = 0; k < 3; ++k)
    EXPECT_GE(measured[k], 0.93 * optimum[k]) << "app" << k + 1 << ": " << measured[k] << " tasks/s of " << optimum[k];
}

TEST(PriceFlow, AfterANodeSlowsDownTheRunFollowsTheNewOptimum) {
  const auto toml = bertin(10000, "[[event]]\nat = 150\nnode = \"C\"\nspeed = 2500\n");
  const auto after = proportional_optimum(bertin(2500));  // (3.46, 13.60, 9.56) tasks/s
  const auto out = test::run(toml);
  ASSERT_TRUE(out.completed) << out.error;
  EXPECT_TRUE(every_task_once(experiment(toml), out.results));
  const double end = first_bag_nearly_done(out.results, 3, 0.9);
  ASSERT_GT(end, 250.0);
  const auto measured = rates(out.results, 3, 180.0, end);
  for (std::size_t k = 0; k < 3; ++k)
    EXPECT_GE(measured[k], 0.9 * after[k]) << "app" << k + 1 << ": " << measured[k] << " tasks/s of " << after[k];
  // app1 lost C's share: no more than the new optimum, give or take the window's noise.
  EXPECT_LE(measured[0], 1.1 * after[0]);
}

}  // namespace
}  // namespace treefarm::sim
