// Calibrate as you go in simulation (docs/live-model.md, "A run without a calibration"):
// the same driver starts the lp policy without a plan (FCFS), the root plans from the
// nodes' estimates once they are tight, and the switch loses and duplicates no task.
#include <gtest/gtest.h>

#include <string>

#include "runtime/lp/SteadyState.hpp"
#include "runtime/sim/Simulation.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"

namespace treefarm::sim {
namespace {

// A fast and a slow worker behind links of different speeds, a compute-bound and a
// communication-bound application: FCFS and the LP's plan share the work differently.
std::string star(const std::string& plan_options) {
  std::string text = "[[node]]\nname = \"master\"\ncores = 0\n"
                     "[[node]]\nname = \"fast\"\nparent = \"master\"\ncores = 1\nspeed = \"2Gf\"\nbandwidth = \"20MBps\"\n"
                     "[[node]]\nname = \"slow\"\nparent = \"master\"\ncores = 1\nspeed = \"0.5Gf\"\nbandwidth = \"100MBps\"\n";
  text += "[[app]]\nname = \"calc\"\nbytes = \"1MB\"\nflops = \"1Gf\"\ntasks = 600\n";
  text += "[[app]]\nname = \"move\"\nbytes = \"4MB\"\nflops = \"0.02Gf\"\ntasks = 600\n";
  text += "[run]\npolicy = \"lp\"\ncomm_model = \"multi-port\"\nbuffer = 4\n";
  text += "[policy.lp]\n" + plan_options;
  return text;
}

TEST(PlanFromEstimatesSim, TheRootPlansFromTightEstimatesAndLosesNothingAcrossTheSwitch) {
  const std::string text = star("plan_samples = 5\nplan_wait = 1000\n");  // only tightness can make the plan
  SimulationOptions o;
  o.plan_from_estimates = true;
  const auto out = test::run(text, nullptr, o);
  ASSERT_TRUE(out.completed) << out.error;
  EXPECT_TRUE(test::every_task_once(test::experiment(text), out.results)) << "the switch lost or duplicated a task";
  const auto& source = out.results.prediction_source;
  ASSERT_EQ(source.rfind("estimates at ", 0), 0u) << "no plan from the estimates: '" << source << "'";
  const double at = std::stod(source.substr(13));
  EXPECT_GT(at, 0.0);
  EXPECT_LT(at, out.results.duration / 2) << "the plan came late: " << source;
  // A simulation's estimates are the platform's own figures: the plan's optimum is the
  // declared platform's.
  const double declared = lp::solve(make_sim_platform(test::experiment(text), nullptr).model).fair_throughput;
  ASSERT_TRUE(out.results.predicted_fair_throughput);
  EXPECT_NEAR(*out.results.predicted_fair_throughput / declared, 1.0, 0.02);
  EXPECT_FALSE(out.results.plan.is_null());
  RecordProperty("plan_at", source);
}

TEST(PlanFromEstimatesSim, WithoutTheOptionThePredictionIsThePlatforms) {
  const std::string text = star("plan_samples = 5\n");
  const auto out = test::run(text);
  ASSERT_TRUE(out.completed) << out.error;
  EXPECT_EQ(out.results.prediction_source, "platform");
}

}  // namespace
}  // namespace treefarm::sim
