// The SimGrid adapter against closed forms and the LP (docs/simulation.md).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>
#include <map>

#include "runtime/core/Policy.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/sim/Simulation.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::sim {
namespace {

using test::every_task_once;
using test::experiment;
using test::run;
using test_support::small_star_toml;
using test_support::synthetic_app_toml;

// A master that only forwards and one worker. Task: 1e8 flop at 1e8 flop/s = 1 s; the
// link carries a task in 1 ms: compute-bound, rho = speed / flops = 1 task/s.
const std::string compute_bound =
    small_star_toml({{"w", "100Mf", "1GBps", "1ms"}}) +
    synthetic_app_toml("a", "1MB", "100Mf", 200);

TEST(Simulation, ComputeBoundWorkerRunsAtSpeedOverFlops) {
  const auto o = run(compute_bound);
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_TRUE(o.results.ok());
  EXPECT_NEAR(o.results.apps[0].throughput, 1.0, 0.01);
  ASSERT_TRUE(o.results.apps[0].predicted);
  EXPECT_NEAR(*o.results.apps[0].predicted, 1.0, 1e-9);
  // Each execution lasts exactly flops / speed.
  for (const auto& t : o.results.tasks) {
    EXPECT_EQ(t.node, "w");
    EXPECT_NEAR(t.compute_seconds, 1.0, 1e-6);
  }
  // 200 tasks of 1 s, back to back after the first transfer.
  EXPECT_NEAR(o.results.duration, 200.0, 0.1);
}

// The link is the bottleneck: 1 MB tasks on a 1 MB/s link with 1 ms latency, computed
// in 1 ms: rho = bandwidth / bytes (latency paid once per task: 1/1.001).
const std::string comm_bound = small_star_toml({{"w", "1Gf", "1MBps", "1ms"}}) +
                               synthetic_app_toml("a", "1MB", "1Mf", 200);

TEST(Simulation, CommunicationBoundLinkRunsAtBandwidthOverBytes) {
  const auto o = run(comm_bound);
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_NEAR(o.results.apps[0].throughput, 1.0 / 1.001, 0.003);
  // The port is busy latency + bytes / bandwidth per task (in the model too).
  EXPECT_NEAR(*o.results.apps[0].predicted, 1.0 / 1.001, 1e-9);
}

TEST(Simulation, Cm02UsesLinkValuesAsGivenUnlikeLv08) {
  // LV08 scales latency by 13.01 and bandwidth by 0.97: about 3 % slower here.
  SimulationOptions lv08;
  lv08.network_model = "LV08";
  const auto o = run(comm_bound, nullptr, lv08);
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_LT(o.results.apps[0].throughput, 0.975);
}

// Two identical workers behind 1 MB/s links, each able to compute 2 tasks/s. One-port:
// the master's single port carries 1 task/s in all; multi-port: each link 1 task/s.
std::string two_worker_star(const char* comm_model) {
  return small_star_toml({{"w1", "200Mf", "1MBps"},
                          {"w2", "200Mf", "1MBps"}}) +
         synthetic_app_toml("a", "1MB", "100Mf", 300) + "[run]\ncomm_model = \"" + comm_model + "\"\n";
}

TEST(Simulation, TwoWorkerStarOnePortMatchesLp) {
  const auto o = run(two_worker_star("one-port"));
  ASSERT_TRUE(o.completed) << o.error;
  ASSERT_TRUE(o.results.predicted_fair_throughput);
  EXPECT_NEAR(*o.results.predicted_fair_throughput, 1.0, 1e-9);
  EXPECT_NEAR(o.results.fair_throughput, 1.0, 0.02);
}

TEST(Simulation, TwoWorkerStarMultiPortMatchesLp) {
  const auto o = run(two_worker_star("multi-port"));
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_NEAR(*o.results.predicted_fair_throughput, 2.0, 1e-9);
  EXPECT_NEAR(o.results.fair_throughput, 2.0, 0.04);
}

// Bandwidth-centric star (beaumont2006 §3.3): w1 gets a task in 0.5 s, w2 in 1 s, both
// compute 1 task/s. LP: alpha1 = 1, alpha2 = 0.5 (port: 0.5·1 + 1·0.5 = 1): 1.5 tasks/s.
const std::string asymmetric_star = small_star_toml({{"w1", "100Mf", "2MBps"},
                                                     {"w2", "100Mf", "1MBps"}}) +
                                     synthetic_app_toml("a", "1MB", "100Mf", 400);

TEST(Simulation, BandwidthCentricReachesTheLpOnAnAsymmetricStar) {
  auto ex = experiment(asymmetric_star);
  ex.run.policy = "cgbc";
  const auto o = simulate(make_sim_platform(ex));
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_NEAR(*o.results.predicted_fair_throughput, 1.5, 1e-9);
  EXPECT_NEAR(o.results.fair_throughput, 1.5, 0.05);
  // FCFS serves both alike, so it cannot beat the LP and stays below it here.
  ex.run.policy = "fcfs";
  const auto f = simulate(make_sim_platform(ex));
  ASSERT_TRUE(f.completed) << f.error;
  EXPECT_LE(f.results.fair_throughput, 1.5 * 1.01);
}

TEST(Simulation, MultiCoreTasksHoldTheirCores) {
  // 2 cores, tasks of 2 cores: one at a time, each flops / (2 · speed) = 0.5 s.
  const auto o = run(small_star_toml({{"w", "100Mf", "1GBps", "", 2}}) +
                     synthetic_app_toml("a", "1kB", "100Mf", 100, "cores_per_task = 2\n"));
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_NEAR(o.results.apps[0].throughput, 2.0, 0.03);
  EXPECT_NEAR(*o.results.apps[0].predicted, 2.0, 1e-9);
  for (const auto& t : o.results.tasks) EXPECT_NEAR(t.compute_seconds, 0.5, 1e-6);
}

// Multi-resource requirements (papers/lee2010 slide 19): "big" needs 4 GiB and
// "fast" cores of at least 1 Gf. Only w2 has the memory; w3 is too slow for "fast" and sits
// under a forwarding node with w2. Every task runs where it fits, the LP (which drops a
// node's rate for what it cannot run) predicts the run, and every task is recorded once.
TEST(Simulation, TasksRunOnlyWhereTheirRequirementsFit) {
  const std::string toml = R"(
[[node]]
name = "m"
cores = 0
[[node]]
name = "w1"
parent = "m"
cores = 1
speed = "1Gf"
memory = "1GiB"
bandwidth = "1GBps"
[[node]]
name = "i"
parent = "m"
cores = 0
bandwidth = "1GBps"
[[node]]
name = "w2"
parent = "i"
cores = 1
speed = "2Gf"
memory = "8GiB"
bandwidth = "1GBps"
[[node]]
name = "w3"
parent = "i"
cores = 1
speed = "500Mf"
memory = "1GiB"
bandwidth = "1GBps"
[[app]]
name = "big"
bytes = 1000
flops = "1Gf"
memory_per_task = "4GiB"
tasks = 30
[[app]]
name = "fast"
bytes = 1000
flops = "1Gf"
min_speed = "1Gf"
tasks = 30
[[app]]
name = "any"
bytes = 1000
flops = "500Mf"
tasks = 30
)";
  const auto o = run(toml);
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_TRUE(every_task_once(experiment(toml), o.results));
  std::map<std::string, std::map<std::string, int>> where;
  for (const auto& t : o.results.tasks) ++where[o.results.apps[t.app].name][t.node];
  EXPECT_EQ(where["big"], (std::map<std::string, int>{{"w2", 30}}));
  EXPECT_EQ(where["fast"].count("w3"), 0u);
  EXPECT_GT(where["any"]["w3"], 0);
  ASSERT_TRUE(o.results.predicted_fair_throughput);
  EXPECT_GT(*o.results.predicted_fair_throughput, 0.0);
}

TEST(Simulation, RootComputesToo) {
  const auto o = run(R"(
[[node]]
name = "m"
cores = 2
speed = "100Mf"
[[app]]
name = "a"
bytes = 1000
flops = "100Mf"
tasks = 100
)");
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_NEAR(o.results.apps[0].throughput, 2.0, 0.03);
  EXPECT_EQ(o.results.nodes[0].tasks_computed, 100u);
}

TEST(Simulation, CalibrationSetsDurationsAndBandwidths) {
  // The file says 1 s per task and a fast link; the calibration says 0.25 s and 2 MB/s
  // for 1 MB tasks: the link (2 tasks/s) now limits, not the CPU (4 tasks/s).
  model::Calibration cal;
  cal.nodes["m"] = model::NodeCalibration{};
  model::NodeCalibration w;
  w.task_seconds["a"] = 0.25;
  w.link_bandwidth = 2e6;
  w.cores = 1;
  cal.nodes["w"] = w;
  const auto o = run(compute_bound, &cal);
  ASSERT_TRUE(o.completed) << o.error;
  // One-port: 0.5 s of bytes + the 1 ms latency the port is held.
  EXPECT_NEAR(*o.results.apps[0].predicted, 1.0 / 0.501, 1e-9);
  EXPECT_NEAR(o.results.apps[0].throughput, 2.0, 0.03);
  for (const auto& t : o.results.tasks) EXPECT_NEAR(t.compute_seconds, 0.25, 1e-6);
}

/// The quickstart's shape: a master, w1 (with w1a and w1b below it) and w2, one core each,
/// loopback links; one application of 1 MB tasks, under lp.
const std::string quickstart_shape =
    test_support::quickstart_nodes_toml() + synthetic_app_toml("a", "1MB", "10Mf", 3000) + "[run]\npolicy = \"lp\"\n";

// The quickstart's shape: four one-core workers on one 2-CPU machine, two per
// CPU, loopback links. The calibration says each kernel took 10 ms at half a CPU and that
// moving a byte costs the machine's CPUs 1 ns. The simulation must share the machine's
// CPUs as the master's prediction does, and print that prediction: before, every worker
// ran on a host of its own at its measured speed, and the simulated quickstart did twice
// what the real one (and the LP) did.
TEST(Simulation, NodesOfOneCalibratedHostShareItsCpusAsTheLpSays) {
  const auto ex = experiment(quickstart_shape);
  model::Calibration cal;
  cal.nodes["master"] = model::NodeCalibration{};
  cal.nodes["master"].host = "vm";
  const std::map<std::string, int> cpu{{"w1", 0}, {"w1a", 0}, {"w1b", 1}, {"w2", 1}};
  for (const auto& [name, c] : cpu) {
    model::NodeCalibration w;
    w.task_seconds["a"] = 0.01;
    w.cores = 1;
    w.host = "vm";
    w.cpus = {c};
    w.cpu_share = 0.5;
    cal.nodes[name] = w;
  }
  model::HostCalibration vm;
  vm.cores = 2;
  vm.comm_cpu_seconds_per_byte = 1e-9;
  cal.hosts["vm"] = vm;
  const auto o = simulate(make_sim_platform(ex, &cal));
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_TRUE(every_task_once(ex, o.results));
  const double lp = lp::solve(lp::model_from_calibration(ex, cal)).fair_throughput;
  ASSERT_TRUE(o.results.apps[0].predicted);
  EXPECT_NEAR(*o.results.apps[0].predicted, lp, 1e-6 * lp);  // what `treefarm predict` says
  // 2 CPUs / (5 ms of kernel + 1 ms of a move) per task when w1 and w2 take a CPU each
  // (a task for w1a also crosses w1: 7 ms): ~333 tasks/s, not the ~400 four workers at
  // 100 tasks/s each would give on hosts of their own. The lp policy follows that plan.
  EXPECT_GT(lp, 250.0);
  EXPECT_LT(lp, 400.0);
  EXPECT_LT(o.results.apps[0].throughput, lp * 1.005);  // never above the model it runs under
  EXPECT_GT(o.results.apps[0].throughput, lp * 0.95);
  // No execution is shorter than its kernel at one full CPU (10 ms at half a CPU); the
  // moves' CPU is spent while the tasks travel.
  for (const auto& t : o.results.tasks) EXPECT_GE(t.compute_seconds, 0.005 - 1e-9) << t.node;
}

// An emulated node's whole task: 1 s of kernel, 2 s of its CPU in all — the
// other second is receiving its 10 MB, which a real node does while the bytes arrive.
// With one task in its buffer it asks for the next only when it finishes one, so the
// next task's transfer (1 s) is time it has nothing to run: the reception must fill it,
// not follow it (2 s per task, the LP's 0.5 tasks/s; charged after the transfer it took
// 3 s per task, 0.33 tasks/s — lan-slices' `wide` waited that way for every matmul).
TEST(Simulation, ATasksReceptionCostsItsNodesCpuWhileTheTaskTravels) {
  const auto ex = experiment(R"(
[[node]]
name = "master"
cores = 0
[[node]]
name = "w"
parent = "master"
cores = 1
bandwidth = "10MBps"
[[app]]
name = "a"
bytes = 10000000
flops = "1Gf"
tasks = 40
[run]
buffer = 1
)");
  model::Calibration cal;
  cal.nodes["master"] = model::NodeCalibration{};
  cal.nodes["master"].host = "m";
  model::NodeCalibration w;
  w.task_seconds["a"] = 1.0;
  w.cores = 1;
  w.host = "w";
  w.link_bandwidth = 1e7;
  cal.nodes["w"] = w;
  model::HostCalibration m, wh;
  m.cores = 1;
  wh.cores = 1;
  wh.task_cpu_seconds["a"] = 2.0;
  cal.hosts["m"] = m;
  cal.hosts["w"] = wh;
  const auto p = make_sim_platform(ex, &cal);
  ASSERT_EQ(p.nodes[1].cpu_pool, 0);
  EXPECT_NEAR(p.nodes[1].task_seconds[0], 1.0, 1e-12);                  // the kernel when it runs
  EXPECT_NEAR(p.nodes[1].receive_work[0], 1.0 * reference_speed, 1e-3);  // the rest while it travels
  const auto o = simulate(p);
  ASSERT_TRUE(o.completed) << o.error;
  ASSERT_TRUE(o.results.apps[0].predicted);
  EXPECT_NEAR(*o.results.apps[0].predicted, 0.5, 1e-9);
  EXPECT_GT(o.results.apps[0].throughput, 0.47);
  EXPECT_LT(o.results.apps[0].throughput, 0.5 * 1.005);
}

// Per task, the simulated CPU pools are charged exactly what the LP charges the hosts:
// the execution, the receiving ends and the sending halves together.
TEST(Simulation, APoolsChargesPerTaskAddUpToTheLpsHostCharges) {
  const auto ex = experiment(quickstart_shape);
  model::Calibration cal;
  const auto node = [](const char* host, double share) {
    model::NodeCalibration n;
    n.task_seconds["a"] = 0.01;
    n.cores = 1;
    n.host = host;
    n.cpu_share = share;
    return n;
  };
  cal.nodes["master"] = model::NodeCalibration{};
  cal.nodes["master"].host = "vm";
  cal.nodes["w1"] = node("vm", 0.5);
  cal.nodes["w1a"] = node("vm", 0.5);
  cal.nodes["w2"] = node("vm", 0.5);
  cal.nodes["w1b"] = node("far", 1.0);  // on a machine of its own
  model::HostCalibration vm, far;
  vm.cores = 2;
  vm.comm_cpu_seconds_per_byte = 1e-9;
  vm.input_cpu_seconds_per_byte = 2e-10;
  vm.receive_cpu_seconds_per_byte = 3e-10;
  far = vm;
  far.cores = 1;
  far.task_cpu_seconds["a"] = 0.05;
  cal.hosts["vm"] = vm;
  cal.hosts["far"] = far;
  const auto p = make_sim_platform(ex, &cal);
  const auto at = [&](const char* name) { return *ex.node_index(name); };  // nodes come parents first
  const auto cpu = [&](const char* u) { return p.nodes[at(u)].work[0] / reference_speed; };  // one thread
  const auto rec = [&](const char* u) { return p.nodes[at(u)].receive_work[0] / reference_speed; };
  const auto snd = [&](const char* u) { return p.nodes[at(u)].send_work[0] / reference_speed; };
  const auto own = [&](const char* u) { return lp::own_host_cpu_per_task(p.model, at(u), 0); };
  // w1a (a leaf on "vm"): its run, and while it travels both moves' CPU: each has both ends on vm.
  EXPECT_NEAR(cpu("w1a") + rec("w1a") + rec("w1"), own("w1a"), 1e-12);
  EXPECT_NEAR(cpu("w1a"), 0.005, 1e-12);  // its kernel at half a CPU
  // w1b (a leaf on a host of its own): its run and its reception on "far" — and the
  // sender's half of its move on w1's pool, on "vm".
  EXPECT_NEAR(cpu("w1b") + rec("w1b"), own("w1b"), 1e-12);
  EXPECT_NEAR(snd("w1b"), 0.5 * 1e-9 * 1e6, 1e-15);
  EXPECT_NEAR(cpu("w1b"), 0.01, 1e-12);  // the kernel runs, the rest is spent receiving
  // w1 forwards: everything beyond its own move is spent when it runs.
  EXPECT_NEAR(cpu("w1") + rec("w1"), own("w1"), 1e-12);
  EXPECT_NEAR(rec("w1"), 1e-9 * 1e6, 1e-15);
  EXPECT_EQ(p.cpu_pools.size(), 2u);  // "vm" (w1, w1a, w2: not pinned) and "far"
}

TEST(Simulation, ErrorsNameTheProblem) {
  // A computing node without speed and without calibration.
  EXPECT_THAT([] { make_sim_platform(experiment(R"(
[[node]]
name = "m"
cores = 1
[[app]]
name = "a"
bytes = 10
flops = 10
tasks = 1
)")); }, testing::ThrowsMessage<model::FileError>(testing::HasSubstr("field 'node[0].speed'")));
}

TEST(Simulation, TimeLimitStopsAndReportsLostTasks) {
  SimulationOptions o;
  o.time_limit = 50;
  const auto out = run(compute_bound, nullptr, o);
  EXPECT_FALSE(out.completed);
  EXPECT_THAT(out.error, testing::HasSubstr("time limit"));
  EXPECT_GT(out.results.lost, 100u);
  EXPECT_FALSE(out.results.ok());
}

TEST(Simulation, SeveralSimulationsInOneProcess) {
  // simulate() forks, so SimGrid's singleton engine is never reused.
  const auto a = run(compute_bound);
  const auto b = run(compute_bound);
  ASSERT_TRUE(a.completed && b.completed);
  EXPECT_EQ(a.results.duration, b.results.duration);  // deterministic
}

}  // namespace
}  // namespace treefarm::sim

namespace treefarm::sim {
namespace {

TEST(SimMapCount, ActorsBeyondTheMachinesMemoryMappingsAreRefusedNamingTheSetting) {
  EXPECT_EQ(map_count_problem(30000, 65530), "");  // two mappings per actor fit
  EXPECT_EQ(map_count_problem(100000, 0), "");     // unknown limit: no check
  const auto why = map_count_problem(100000, 65530);
  EXPECT_NE(why.find("100000 actors"), std::string::npos) << why;
  EXPECT_NE(why.find("201000 memory mappings"), std::string::npos) << why;
  EXPECT_NE(why.find("vm.max_map_count of 65530"), std::string::npos) << why;
  EXPECT_NE(why.find("sysctl -w vm.max_map_count=402000"), std::string::npos) << why;
}

}  // namespace
}  // namespace treefarm::sim
