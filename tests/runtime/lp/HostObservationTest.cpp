// The a-posteriori model of a shared host (docs/live-model.md, "The a-posteriori
// prediction"): the CPU the machine left to the tree, the CPU each node's tasks really
// cost and the host's costs scaled to the tree's CPU, each checked against an optimum
// computed by hand.
#include <stdexcept>

#include <gtest/gtest.h>

#include "TestPlatforms.hpp"
#include "runtime/lp/HostObservation.hpp"
#include "runtime/lp/SteadyState.hpp"

namespace treefarm::lp {
namespace {

using testing::one_host;
using testing::shared_host;

TEST(HostObservation, ATreeThatGotHalfTheMachinesCpuHalvesTheOptimum) {
  const auto m = shared_host();
  ASSERT_NEAR(solve(m).fair_throughput, 2.0, 1e-6);
  // 10 s window; other work took half the CPU: 10 of the 20 CPU-seconds were the tree's
  // to use. Each worker ran 5 tasks on 5 CPU-seconds (1 s each, as calibrated).
  HostObservation obs{0, 10.0, 10.0, {{"master", 0.0}, {"w1", 5.0}, {"w2", 5.0}}, {{"w1", {{"job", 5}}}, {"w2", {{"job", 5}}}}};
  HostObservationSummary s;
  const auto o = observed_host_model(m, obs, &s);
  EXPECT_DOUBLE_EQ(o.hosts[0].cores, 1.0);
  EXPECT_DOUBLE_EQ(s.available_cores, 1.0);
  EXPECT_DOUBLE_EQ(s.tree_cpu_seconds, 10.0);
  EXPECT_DOUBLE_EQ(s.kernel_factor.at("w1"), 1.0);
  // By hand: host row α1 + α2 <= 1 core: 1 task/s.
  EXPECT_NEAR(solve(o).fair_throughput, 1.0, 1e-6);
}

TEST(HostObservation, TasksThatCostMoreCpuAndTheMastersCpuSetTheCosts) {
  // γ = 1e-6 CPU-s per byte: 1 CPU-s per 1 MB hop (master -> worker, both on the host):
  // a-priori host row 2·α1 + 2·α2 <= 2, optimum 1 task/s.
  const auto m = shared_host(1e-6);
  ASSERT_NEAR(solve(m).fair_throughput, 1.0, 1e-6);
  // The whole machine was the tree's (20 CPU-s in 10 s). Each worker ran 4 tasks on 8
  // CPU-seconds: 2 CPU-s per task (g = 2). The master used 4 CPU-seconds for the 8 moves:
  // 16 + 8·f·1 = 20 gives f = 0.5.
  HostObservation obs{0, 10.0, 20.0, {{"master", 4.0}, {"w1", 8.0}, {"w2", 8.0}}, {{"w1", {{"job", 4}}}, {"w2", {{"job", 4}}}}};
  HostObservationSummary s;
  const auto o = observed_host_model(m, obs, &s);
  EXPECT_DOUBLE_EQ(o.nodes[1].task_seconds[0], 2.0);
  EXPECT_NEAR(s.cost_factor, 0.5, 1e-9);
  EXPECT_NEAR(o.hosts[0].comm_cpu_seconds_per_byte, 0.5e-6, 1e-15);
  EXPECT_DOUBLE_EQ(o.hosts[0].cores, 2.0);
  // The host's charge for the tasks done is the tree's CPU.
  EXPECT_NEAR(4 * own_host_cpu_per_task(o, 1, 0) + 4 * own_host_cpu_per_task(o, 2, 0), 20.0, 1e-6);
  // By hand: node rows 2·α_u <= 1; host row 2.5·(α1 + α2) <= 2: 0.8 tasks/s.
  EXPECT_NEAR(solve(o).fair_throughput, 0.8, 1e-6);
}

TEST(HostObservation, MissingOrForeignFiguresAreRefusedByName) {
  auto m = shared_host();
  HostObservation obs{0, 10.0, 20.0, {{"w1", 5.0}, {"w2", 5.0}}, {{"w1", {{"job", 5}}}}};
  try {
    (void)observed_host_model(m, obs);
    FAIL() << "no CPU figure of the master";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'master'"), std::string::npos) << e.what();
  }
  obs.node_cpu_seconds["master"] = 1.0;
  obs.tasks["w3"]["job"] = 1;
  EXPECT_THROW((void)observed_host_model(m, obs), std::invalid_argument);
  obs.tasks.erase("w3");
  m.nodes[2].host = -1;  // w2 on a machine of its own: its tasks are not this host's
  obs.tasks["w2"]["job"] = 2;
  EXPECT_THROW((void)observed_host_model(m, obs), std::invalid_argument);
  obs.window_seconds = 0;
  EXPECT_THROW((void)observed_host_model(shared_host(), obs), std::invalid_argument);
}

TEST(HostObservation, ANodesCpuIsSplitOverItsTasksAsTheHostsWholeTaskCostsSay) {
  // Two applications; the host measured a task of "big" at 3× one of "small" through the
  // runtime. w1's calibrated kernels say 1 s and 1 s, w2's 1 s and 9 s (a loaded
  // calibration): each ran 2 big and 6 small tasks on 6 CPU-seconds, so both get
  // 1.5 s per big task and 0.5 s per small one, whatever their calibration said.
  const auto m = one_host(testing::Builder{}.app("big", 0).app("small", 0), {{"w1", {1.0, 1.0}}, {"w2", {1.0, 9.0}}},
                          {.task_cpu_seconds = {0.3, 0.1}});
  HostObservation obs{0, 10.0, 20.0, {{"master", 0.0}, {"w1", 6.0}, {"w2", 6.0}},
                      {{"w1", {{"big", 2}, {"small", 6}}}, {"w2", {{"big", 2}, {"small", 6}}}}};
  const auto o = observed_host_model(m, obs);
  for (std::size_t u : {1u, 2u}) {
    EXPECT_NEAR(o.nodes[u].task_seconds[0], 1.5, 1e-12) << o.nodes[u].name;
    EXPECT_NEAR(o.nodes[u].task_seconds[1], 0.5, 1e-12) << o.nodes[u].name;
  }
}

TEST(HostObservation, ANodeThatComputedNothingTakesItsHostsObservedFactor) {
  // w1 and w2 each ran 4 tasks of 1 s (calibrated) on 8 CPU-seconds: g = 2. "idle", on the
  // same host, computed nothing: at its calibrated 1 s it would look half as costly as the
  // nodes that were observed, and the LP would give it a core's worth of tasks (by hand:
  // α_idle = 1, 2·(α1 + α2) <= 1.6 - 1: 1.3 tasks/s, above the 0.8 measured).
  const auto m = one_host(testing::Builder{}.app("job", 1e6), {{"w1", {1.0}}, {"w2", {1.0}}, {"idle", {1.0}}});
  HostObservation obs{0, 10.0, 16.0, {{"master", 0.0}, {"w1", 8.0}, {"w2", 8.0}, {"idle", 0.0}},
                      {{"w1", {{"job", 4}}}, {"w2", {{"job", 4}}}}};
  const auto o = observed_host_model(m, obs);
  EXPECT_DOUBLE_EQ(o.nodes[3].task_seconds[0], 2.0);
  // By hand: host row 2·(α1 + α2 + α_idle) <= 1.6: 0.8 tasks/s, what the tree did.
  EXPECT_NEAR(solve(o).fair_throughput, 0.8, 1e-6);
}

TEST(HostObservation, TheNodeRowChargesTheKernelsCpuNotTheWholeProcess) {
  // One computing worker on a 2-core host, tasks of 0.5 s (calibrated), a whole task
  // costing the host 1 CPU-s (C). In 10 s w1 ran 10 tasks: its kernels used 8 CPU-s, its
  // process 15 (the transport's I/O threads ran beside the kernels on the other CPU), the
  // master 5: the tree had the machine's 20 CPU-s. Measured: 1 task/s.
  const auto m = one_host(testing::Builder{}.app("job", 1e6), {{"w1", {0.5}}}, {.task_cpu_seconds = {1.0}});
  HostObservation obs{0, 10.0, 20.0, {{"master", 5.0}, {"w1", 15.0}}, {{"w1", {{"job", 10}}}}, {{"w1", {{"job", 8.0}}}}};
  HostObservationSummary s;
  const auto o = observed_host_model(m, obs, &s);
  // The whole process against w1's one core (1.5 CPU-s per task) would make the point the
  // run was at infeasible (1.5 cores) and the optimum 0.667 tasks/s. By hand: node row
  // 0.8·α <= 1; the host's charge 10·max(0.8, f·1) = 20 gives f = 2, host row 2·α <= 2:
  // 1 task/s, what the run did.
  EXPECT_NEAR(o.nodes[1].task_seconds[0], 0.8, 1e-12);
  EXPECT_NEAR(s.kernel_factor.at("w1"), 1.6, 1e-12);
  EXPECT_NEAR(s.cost_factor, 2.0, 1e-9);
  EXPECT_NEAR(solve(o).fair_throughput, 1.0, 1e-6);
  // Without the kernels' figure the process's CPU stands for them.
  obs.kernel_cpu_seconds.clear();
  EXPECT_NEAR(observed_host_model(m, obs).nodes[1].task_seconds[0], 1.5, 1e-12);
}

TEST(HostObservation, AnIdleTwinGetsTheKernelsCostsNotACheaperMix) {
  // The quickstart's degenerate plan: every task on w1, its twin w2 idle. "big" is a
  // kernel (0.5 s calibrated, no bytes), "small" a transfer (0.1 s kernel, 1 MB, γ = 1e-6
  // CPU-s per byte: 1 CPU-s per hop); the host measured a whole task of either at 1 CPU-s.
  // In 10 s w1 ran 5 of each (0.5 tasks/s per weight): its kernels used 2.5 + 0.5 CPU-s,
  // its process 15, the master 5, the tree the machine's 20 CPU-s.
  const auto m = one_host(testing::Builder{}.app("big", 0).app("small", 1e6), {{"w1", {0.5, 0.1}}, {"w2", {0.5, 0.1}}},
                          {.comm_cpu_seconds_per_byte = 1e-6, .task_cpu_seconds = {1.0, 1.0}});
  HostObservation obs{0, 10.0, 20.0, {{"master", 5.0}, {"w1", 15.0}, {"w2", 0.0}},
                      {{"w1", {{"big", 5}, {"small", 5}}}}, {{"w1", {{"big", 2.5}, {"small", 0.5}}}}};
  HostObservationSummary s;
  const auto o = observed_host_model(m, obs, &s);
  // The whole process split as the host's whole-task costs say (1.5 CPU-s per task of
  // either) would make w1 infeasible where it ran (node row 1.5 cores) and w2's "small"
  // (0.1·g, g = 15/3) look cheaper than w1's: by hand the LP then puts big on w1 and small
  // on w2, host row 1.5·T + 1.5·T <= 2: 0.667 tasks/s, a third above the run.
  // With the kernels' CPU: 0.5 and 0.1 s on both twins; the charge 5·max(0.5, f) +
  // 5·(0.1 + f) = 20 gives f = 1.95: big 1.95, small 2.05 CPU-s per task, host row
  // 4·T <= 2: 0.5 tasks/s, what the run did.
  for (std::size_t u : {1u, 2u}) {
    EXPECT_NEAR(o.nodes[u].task_seconds[0], 0.5, 1e-12) << o.nodes[u].name;
    EXPECT_NEAR(o.nodes[u].task_seconds[1], 0.1, 1e-12) << o.nodes[u].name;
  }
  EXPECT_NEAR(s.cost_factor, 1.95, 1e-9);
  EXPECT_NEAR(solve(o).fair_throughput, 0.5, 1e-6);
}

TEST(HostObservation, TheAvailableCpusCountAtTheShareASaturatedTreeUses) {
  // A quiet 2-core host; a whole task costs it 1 CPU-s (C, measured by a calibration whose
  // tree, at its limit, used 95 % of the CPU it could have had: the other 5 % are its
  // processes' waits for one another, which C holds as idle CPU). Tasks of 0.5 s on two
  // one-core workers. In 10 s the tree ran 19 tasks on 19 CPU-s (kernels 5 + 4.5, the
  // rest the transport's), the machine left 1 CPU-s idle: 20 available, 1.9 tasks/s.
  const auto m = one_host(testing::Builder{}.app("job", 0), {{"w1", {0.5}}, {"w2", {0.5}}},
                          {.task_cpu_seconds = {1.0}, .busy_share = 0.95});
  // The a priori: C already holds the idle CPU, the busy share is not charged again. By
  // hand: host row 1·(α1 + α2) <= 2, node rows 0.5·α_u <= 1: 2 tasks/s.
  EXPECT_NEAR(solve(m).fair_throughput, 2.0, 1e-6);
  HostObservation obs{0, 10.0, 20.0, {{"master", 1.5}, {"w1", 9.0}, {"w2", 8.5}}, {{"w1", {{"job", 10}}}, {"w2", {{"job", 9}}}},
                      {{"w1", {{"job", 5.0}}}, {"w2", {{"job", 4.5}}}}};
  HostObservationSummary s;
  const auto o = observed_host_model(m, obs, &s);
  // The charge 19·max(0.5, f·1) = 19 gives f = 1: a task's 1 CPU-s is all the tree's CPU.
  // Counting the machine's idle CPU as usable: host row α1 + α2 <= 2, 2 tasks/s, 5 % above
  // the run. By hand with the busy share: cores 2·0.95 = 1.9, α1 + α2 <= 1.9: 1.9 tasks/s.
  EXPECT_NEAR(s.cost_factor, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(s.busy_share, 0.95);
  EXPECT_NEAR(s.available_cores, 1.9, 1e-12);
  EXPECT_NEAR(solve(o).fair_throughput, 1.9, 1e-6);
  // Other work took 0.5 core (15 CPU-s available, the tree's 14.25 and 0.75 idle, 14.25
  // tasks): 1.5 cores × 0.95, 1.425 tasks/s.
  obs.available_cpu_seconds = 15.0;
  obs.node_cpu_seconds = {{"master", 1.25}, {"w1", 6.5}, {"w2", 6.5}};
  obs.tasks = {{"w1", {{"job", 7.125}}}, {"w2", {{"job", 7.125}}}};
  obs.kernel_cpu_seconds = {{"w1", {{"job", 3.5625}}}, {"w2", {{"job", 3.5625}}}};
  EXPECT_NEAR(solve(observed_host_model(m, obs)).fair_throughput, 1.425, 1e-6);
}

}  // namespace
}  // namespace treefarm::lp
