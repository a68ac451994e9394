// Re-planning in simulation (docs/live-model.md): on a star where one worker drops to a
// quarter of its speed 30 s into the run, the lp policy re-plans within 10 s of the
// change, loses and duplicates no task, finishes within 1.15x of the best makespan the
// new optimum allows, and beats fcfs with PUSH migration; a steady star never re-plans.
#include <gtest/gtest.h>

#include <string>

#include "runtime/sim/Simulation.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"

namespace treefarm::sim {
namespace {

std::string star(const std::string& policy, const std::string& migration, bool change, int tasks = 300) {
  std::string text = "[[node]]\nname = \"master\"\ncores = 0\n";
  for (const char* w : {"w1", "w2", "w3"})
    text += std::string("[[node]]\nname = \"") + w +
            "\"\nparent = \"master\"\ncores = 1\nspeed = \"1Gf\"\nbandwidth = \"100MBps\"\n";
  text += "[[app]]\nname = \"job\"\nbytes = \"1MB\"\nflops = \"1Gf\"\ntasks = " + std::to_string(tasks) + "\n";
  text += "[run]\npolicy = \"" + policy + "\"\ncomm_model = \"multi-port\"\nbuffer = 50\nmigration = \"" + migration + "\"\n";
  if (policy == "lp") text += "[policy.lp]\nreplan = 1\n";
  if (change) text += "[[event]]\nat = 30\nnode = \"w1\"\nspeed = \"0.25Gf\"\n";
  return text;
}

TEST(ReplanSim, AQuarterSpeedWorkerIsReplannedAroundQuickly) {
  const std::string text = star("lp", "off", true);
  const auto lp = test::run(text);
  ASSERT_TRUE(lp.completed) << lp.error;
  EXPECT_TRUE(test::every_task_once(test::experiment(text), lp.results)) << "a re-plan lost or duplicated a task";
  ASSERT_GE(lp.results.replans.size(), 1u);
  const auto& first = lp.results.replans[0];
  EXPECT_EQ(first.at("node").get<std::string>(), "w1");
  EXPECT_GT(first.at("at").get<double>(), 30.0);
  EXPECT_LE(first.at("at").get<double>(), 40.0) << "re-planned more than 10 s after the change";
  EXPECT_NEAR(first.at("new_optimum").get<double>(), 2.25, 0.05);
  EXPECT_LE(lp.results.replans.size(), 2u) << "flapping";
  // The best makespan the new optimum allows: what was done at 30 s, the rest at 2.25 tasks/s.
  std::size_t done_at_change = 0;
  for (const auto& t : lp.results.tasks) done_at_change += t.completed_at <= 30.0 ? 1 : 0;
  const double best = 30.0 + static_cast<double>(300 - done_at_change) / 2.25;
  EXPECT_LE(lp.results.duration, 1.15 * best) << "best " << best << " s";

  const auto fcfs_push = test::run(star("fcfs", "push", true));
  ASSERT_TRUE(fcfs_push.completed) << fcfs_push.error;
  EXPECT_LT(lp.results.duration, fcfs_push.results.duration);
  RecordProperty("lp_seconds", std::to_string(lp.results.duration));
  RecordProperty("fcfs_push_seconds", std::to_string(fcfs_push.results.duration));
  RecordProperty("best_seconds", std::to_string(best));
}

TEST(ReplanSim, ASteadyStarNeverReplansInFiveMinutes) {
  const auto o = test::run(star("lp", "off", false, 900));  // 300 s at 3 tasks/s
  ASSERT_GE(o.results.duration, 295.0);
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_TRUE(o.results.replans.empty()) << o.results.replans.dump();
}

}  // namespace
}  // namespace treefarm::sim
