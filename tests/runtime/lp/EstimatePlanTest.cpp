// Calibrate as you go (docs/live-model.md): the tightness rule over synthetic estimates —
// too few samples or too wide an interval keep the run waiting, every needed figure tight
// makes the plan once, from the estimates' own figures; max_wait makes it with what there is.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/lp/EstimatePlan.hpp"
#include "runtime/model/Experiment.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::lp {
namespace {

using net::msg::Estimate;

// A forwarding master, w1 (1 core) with a child w1a (1 core), and w2 (1 core); no speed
// declared: only the estimates give task times.
model::Experiment tree() {
  return model::parse_experiment(test_support::star_nodes_toml(2) + test_support::node_toml("w1a", "w1", 1) + R"(
[[app]]
name = "mm"
kernel = "matmul"
n = 64
tasks = 100
[[app]]
name = "ma"
kernel = "matadd"
n = 64
weight = 2
tasks = 100
[run]
policy = "lp"
comm_model = "multi-port"
)",
                                 "tree.toml");
}

Estimate task(const std::string& node, std::uint16_t app, double mean, double spread, std::uint32_t samples) {
  return Estimate{node, Estimate::What::task_seconds, app, mean, spread, samples, 0};
}
Estimate link(const std::string& node, double mean, double spread, std::uint32_t samples) {
  return Estimate{node, Estimate::What::link_bandwidth, 0, mean, spread, samples, 0};
}

// Every task time of every worker, with `spread` relative to its mean and `samples`.
std::vector<Estimate> all_tasks(double spread, std::uint32_t samples) {
  std::vector<Estimate> out;
  const std::map<std::string, double> base = {{"w1", 0.010}, {"w2", 0.020}, {"w1a", 0.040}};
  for (const auto& [node, s] : base) {
    out.push_back(task(node, 0, s, s * spread, samples));
    out.push_back(task(node, 1, s / 10, s / 10 * spread, samples));
  }
  return out;
}

EstimatePlan::Builder declared(const model::Experiment& ex) {
  return [&ex](const MeasuredSeconds& s, const MeasuredBandwidth& b) { return model_from_experiment(ex, &s, &b); };
}

const std::set<std::string> loopback = {"w1", "w2", "w1a"};  // every link free: no link figure needed

TEST(EstimatePlan, NeededFiguresAreEveryComputingNodesTaskTimesAndTheLinksNotFree) {
  const auto ex = tree();
  const auto all = needed_figures(ex, {});
  EXPECT_EQ(all.size(), 3u * 2 + 3);  // three workers × two applications, three links
  EXPECT_FALSE(all.contains({"master", 0}));  // forwards only
  EXPECT_FALSE(all.contains({"master", -1}));  // the root has no link
  EXPECT_TRUE(all.contains({"w1a", -1}));
  const auto some = needed_figures(ex, {"w1a"});
  EXPECT_FALSE(some.contains({"w1a", -1}));
  EXPECT_TRUE(some.contains({"w1", -1}));
}

TEST(EstimatePlan, TheHalfWidthIsThatOfTheMeanOverAtMostTheEffectiveSamples) {
  const EstimatePlanOptions o;
  EXPECT_NEAR(relative_half_width(task("w1", 0, 1.0, 0.1, 10), o), 1.96 * 0.1 / std::sqrt(10.0), 1e-12);
  // An exponentially weighted mean is worth 19 samples however many were seen.
  EXPECT_NEAR(relative_half_width(task("w1", 0, 1.0, 0.1, 1000), o), 1.96 * 0.1 / std::sqrt(19.0), 1e-12);
  EXPECT_TRUE(std::isinf(relative_half_width(task("w1", 0, 1.0, 0.1, 0), o)));
}

TEST(EstimatePlan, TooFewSamplesOrTooWideAnIntervalWaitAndSayWhich) {
  const auto ex = tree();
  EstimatePlan plan(ex, loopback, declared(ex));
  // 5 of 10 samples everywhere.
  EXPECT_FALSE(plan.update(all_tasks(0.01, 5), 2.0));
  ASSERT_EQ(plan.loose().size(), 6u);
  EXPECT_NE(plan.loose().front().find("5 of 10 samples"), std::string::npos) << plan.loose().front();
  // Enough samples, but a 20 % spread: ±9.0 % > ±5 %.
  EXPECT_FALSE(plan.update(all_tasks(0.20, 40), 3.0));
  ASSERT_EQ(plan.loose().size(), 6u);
  EXPECT_NE(plan.loose().front().find("> ±5.0%"), std::string::npos) << plan.loose().front();
  // One figure left loose (w2's ma) keeps the plan waiting.
  auto almost = all_tasks(0.05, 40);
  for (auto& e : almost)
    if (e.node == "w2" && e.app == 1) e.spread = e.mean;
  EXPECT_FALSE(plan.update(almost, 4.0));
  ASSERT_EQ(plan.loose().size(), 1u);
  EXPECT_EQ(plan.loose().front().rfind("w2: task time of 'ma'", 0), 0u) << plan.loose().front();
  EXPECT_FALSE(plan.made());
}

TEST(EstimatePlan, EveryFigureTightMakesThePlanOnceFromTheEstimates) {
  const auto ex = tree();
  EstimatePlan plan(ex, loopback, declared(ex));
  const auto made = plan.update(all_tasks(0.05, 40), 6.5);  // 1.96·0.05/√19 = ±2.2 %
  ASSERT_TRUE(made);
  EXPECT_TRUE(made->tight);
  EXPECT_DOUBLE_EQ(made->at, 6.5);
  EXPECT_TRUE(plan.loose().empty());
  // The model is the estimates': w1's mm 10 ms, w1a's ma 4 ms.
  EXPECT_DOUBLE_EQ(made->model.nodes[1].task_seconds[0], 0.010);
  EXPECT_DOUBLE_EQ(made->model.nodes[3].task_seconds[1], 0.004);
  // Loopback links unconstrained: each worker's time shared between mm (weight 1) and ma
  // (weight 2): Σ_u 1 / (t_mm + 2·t_ma) = 1/0.012 + 1/0.024 + 1/0.048.
  EXPECT_NEAR(made->solution.fair_throughput, 1 / 0.012 + 1 / 0.024 + 1 / 0.048, 1e-6);
  EXPECT_FALSE(plan.update(all_tasks(0.05, 80), 7.5));  // made once
}

TEST(EstimatePlan, ALinkThatIsNotFreeMustBeTightToo) {
  const auto ex = tree();
  EstimatePlan plan(ex, {"w1a"}, declared(ex));
  auto estimates = all_tasks(0.05, 40);
  estimates.push_back(link("w1", 1e8, 1e7, 40));
  estimates.push_back(link("w2", 5e7, 1e6, 3));
  EXPECT_FALSE(plan.update(estimates, 5.0));  // w2's link: too few samples
  ASSERT_EQ(plan.loose().size(), 1u);
  EXPECT_EQ(plan.loose().front(), "w2: link: 3 of 10 samples");
  estimates.back().spread = 2e7;  // 12 samples, ±18 %
  estimates.back().samples = 12;
  EXPECT_FALSE(plan.update(estimates, 5.5));
  ASSERT_EQ(plan.loose().size(), 1u);
  estimates.back().spread = 1e6;
  const auto made = plan.update(estimates, 6.0);
  ASSERT_TRUE(made);
  EXPECT_DOUBLE_EQ(made->model.nodes[2].link_bandwidth, 5e7);
  EXPECT_TRUE(std::isinf(made->model.nodes[3].link_bandwidth));  // free: as the builder has it
}

TEST(EstimatePlan, ALinkNeverEstimatedDoesNotHoldThePlanBack) {
  const auto ex = tree();
  EstimatePlan plan(ex, {}, declared(ex));  // every link needed, none estimated (saturated links)
  const auto made = plan.update(all_tasks(0.05, 40), 6.0);
  ASSERT_TRUE(made);
  EXPECT_TRUE(made->tight);
  EXPECT_TRUE(std::isinf(made->model.nodes[1].link_bandwidth));  // the builder's (declared: none)
}

TEST(EstimatePlan, AtMaxWaitThePlanIsMadeWithWhatThereIs) {
  const auto ex = tree();
  EstimatePlanOptions o;
  o.max_wait = 10;
  EstimatePlan plan(ex, loopback, declared(ex), o);
  auto estimates = all_tasks(0.30, 40);  // ±13.5 %: loose
  std::erase_if(estimates, [](const Estimate& e) { return e.node == "w1a" && e.app == 0; });  // never ran mm
  EXPECT_FALSE(plan.update(estimates, 9.9));
  const auto made = plan.update(estimates, 10.0);
  ASSERT_TRUE(made);
  EXPECT_FALSE(made->tight);
  EXPECT_FALSE(plan.loose().empty());
  EXPECT_FALSE(made->model.can_run(3, 0));  // w1a: no mm figure, no speed: not in the plan for mm
  EXPECT_TRUE(made->model.can_run(3, 1));
}

// A machine the nodes share: loose task times (wall times under contention) do not hold
// the plan back; the check does, and its model is the plan's.
TEST(EstimatePlan, OnASharedMachineTheHostCheckJudgesAndGivesTheModel) {
  const auto ex = tree();
  EstimatePlan plan(ex, loopback, declared(ex));
  int checks = 0;
  bool ready = false;
  plan.follow_host([&](const PlatformModel& built) {
    ++checks;
    EXPECT_DOUBLE_EQ(built.nodes[1].task_seconds[0], 0.010);  // built from the estimates
    if (!ready) return EstimatePlan::HostModel{std::nullopt, {"host: the tree's CPU per task: ±7.0 % > ±5.0 %"}};
    auto observed = built;
    for (auto& n : observed.nodes)
      for (auto& t : n.task_seconds) t *= 2;  // the machine ran at half the kernels' speed
    return EstimatePlan::HostModel{observed, {}};
  });
  auto estimates = all_tasks(0.30, 3);  // ±34 % over 3 samples: loose by the nodes' own rule
  std::erase_if(estimates, [](const Estimate& e) { return e.node == "w1a" && e.app == 0; });
  EXPECT_FALSE(plan.update(estimates, 2.0));  // w1a has no mm sample yet: no check
  EXPECT_EQ(checks, 0);
  ASSERT_EQ(plan.loose().size(), 1u);
  EXPECT_EQ(plan.loose().front(), "w1a: task time of 'mm': 0 of 1 samples");
  estimates = all_tasks(0.30, 3);
  EXPECT_FALSE(plan.update(estimates, 4.0));  // every figure has a sample: the check says no
  EXPECT_EQ(checks, 1);
  EXPECT_FALSE(plan.made());
  ASSERT_EQ(plan.loose().size(), 1u);
  EXPECT_EQ(plan.loose().front(), "host: the tree's CPU per task: ±7.0 % > ±5.0 %");
  ready = true;
  const auto made = plan.update(estimates, 6.0);
  ASSERT_TRUE(made);
  EXPECT_TRUE(made->tight);
  EXPECT_DOUBLE_EQ(made->model.nodes[1].task_seconds[0], 0.020);  // the check's model
  EXPECT_NEAR(made->solution.fair_throughput, (1 / 0.012 + 1 / 0.024 + 1 / 0.048) / 2, 1e-6);
  EXPECT_FALSE(plan.update(estimates, 7.0));  // made once
}

TEST(EstimatePlan, OnASharedMachineAtMaxWaitThePlanTakesTheChecksModelStillLoose) {
  const auto ex = tree();
  EstimatePlanOptions o;
  o.max_wait = 10;
  EstimatePlan plan(ex, loopback, declared(ex), o);
  plan.follow_host([](const PlatformModel& built) {
    auto observed = built;
    observed.nodes[1].task_seconds[0] = 1.0;
    return EstimatePlan::HostModel{observed, {"the interval: -12.0 % to +8.1 % > ±10.0 %"}};
  });
  EXPECT_FALSE(plan.update(all_tasks(0.05, 40), 9.0));
  const auto made = plan.update(all_tasks(0.05, 40), 10.0);
  ASSERT_TRUE(made);
  EXPECT_FALSE(made->tight);
  EXPECT_DOUBLE_EQ(made->model.nodes[1].task_seconds[0], 1.0);
  EXPECT_EQ(plan.loose(), std::vector<std::string>{"the interval: -12.0 % to +8.1 % > ±10.0 %"});
}

TEST(EstimatePlan, OptionsComeFromPolicyLpAndAreChecked) {
  const auto o = EstimatePlanOptions::from_policy_options({{"plan_ci", 0.1}, {"plan_samples", 4}, {"plan_wait", 5}});
  EXPECT_DOUBLE_EQ(o.max_half_width, 0.1);
  EXPECT_EQ(o.min_samples, 4u);
  EXPECT_DOUBLE_EQ(o.max_wait, 5);
  EXPECT_THROW((void)EstimatePlanOptions::from_policy_options({{"plan_ci", 0}}), std::invalid_argument);
  EXPECT_THROW((void)EstimatePlanOptions::from_policy_options({{"plan_samples", 2.5}}), std::invalid_argument);
  EXPECT_THROW((void)EstimatePlanOptions::from_policy_options({{"plan_wait", -1}}), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::lp
