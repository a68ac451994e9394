// Tests of runtime/lp/PlatformModel.hpp: model_from_experiment and validate.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"

namespace treefarm::lp {
namespace {

model::NodeSpec node(std::string name, std::optional<std::string> parent, std::uint32_t cores,
                     std::optional<double> speed, std::optional<double> bandwidth) {
  model::NodeSpec n;
  n.name = std::move(name);
  n.parent = std::move(parent);
  n.cores = cores;
  n.speed = speed;
  n.bandwidth = bandwidth;
  return n;
}

model::AppSpec abstract_app(std::string name, double bytes, double flops, double weight = 1.0,
                            std::uint32_t cores_per_task = 1) {
  model::AppSpec a;
  a.name = std::move(name);
  a.kernel = model::Kernel::abstract;
  a.bytes = static_cast<std::uint64_t>(bytes);
  a.flops = flops;
  a.weight = weight;
  a.tasks = 100;
  a.cores_per_task = cores_per_task;
  return a;
}

/// mm: 10 matmul tasks of order 100.
model::AppSpec matmul_app() {
  model::AppSpec mm;
  mm.name = "mm";
  mm.kernel = model::Kernel::matmul;
  mm.n = 100;
  mm.tasks = 10;
  return mm;
}

/// master (4 cores, 1e9 flop/s) -> w1 (2 cores, 2e9 flop/s, 1e6 B/s) and w2 (loopback).
model::Experiment experiment() {
  model::Experiment e;
  e.nodes.push_back(node("master", std::nullopt, 4, 1e9, std::nullopt));
  e.nodes.push_back(node("w1", "master", 2, 2e9, 1e6));
  e.nodes.push_back(node("w2", "master", 1, 1e9, std::nullopt));
  e.apps.push_back(matmul_app());
  e.apps.push_back(abstract_app("wide", 1000, 8e9, 2.0, 2));
  return e;
}

TEST(ModelFromExperiment, DurationsFromSpeedAndCoresPerTask) {
  const PlatformModel m = model_from_experiment(experiment());
  ASSERT_EQ(m.nodes.size(), 3u);
  ASSERT_EQ(m.apps.size(), 2u);
  EXPECT_EQ(m.apps[0].bytes, 2.0 * 100 * 100 * 8);  // matmul input A and B
  EXPECT_EQ(m.apps[1].weight, 2.0);
  EXPECT_EQ(m.nodes[1].parent, 0);
  EXPECT_TRUE(std::isinf(m.nodes[0].link_bandwidth));
  EXPECT_EQ(m.nodes[1].link_bandwidth, 1e6);
  EXPECT_TRUE(std::isinf(m.nodes[2].link_bandwidth));  // no bandwidth: loopback
  EXPECT_TRUE(std::isinf(m.nodes[1].max_out_bandwidth));
  // matmul n=100: 2e6 flop on one core at 1e9 flop/s.
  EXPECT_DOUBLE_EQ(m.nodes[0].task_seconds[0], 2e6 / 1e9);
  EXPECT_DOUBLE_EQ(m.nodes[1].task_seconds[0], 2e6 / 2e9);
  // 8e9 flop on 2 cores at 2e9 flop/s each: 2 s.
  EXPECT_DOUBLE_EQ(m.nodes[1].task_seconds[1], 2.0);
  // w2 has 1 core < 2 cores per task: cannot run "wide".
  EXPECT_FALSE(m.can_run(2, 1));
  EXPECT_TRUE(m.can_run(2, 0));
}

TEST(ModelFromExperiment, MeasuresOverrideSpeedAndBandwidth) {
  model::Experiment e = experiment();
  e.run.comm_model = model::CommModel::multi_port;
  e.run.max_out_bandwidth = 5e6;
  const MeasuredSeconds seconds{{"w1", {{"mm", 0.25}}}};
  const MeasuredBandwidth bandwidth{{"w2", 3e7}};
  const PlatformModel m = model_from_experiment(e, &seconds, &bandwidth);
  EXPECT_EQ(m.comm_model, model::CommModel::multi_port);
  EXPECT_EQ(m.nodes[1].task_seconds[0], 0.25);
  EXPECT_DOUBLE_EQ(m.nodes[1].task_seconds[1], 2.0);  // not measured: from speed
  EXPECT_EQ(m.nodes[2].link_bandwidth, 3e7);
  EXPECT_EQ(m.nodes[1].link_bandwidth, 1e6);
  EXPECT_EQ(m.nodes[0].max_out_bandwidth, 5e6);
}

TEST(ModelFromCalibration, UsesMeasuresAndTheAdvertisedCores) {
  model::Calibration cal;
  cal.nodes["w1"].cores = 4;  // advertised when it joined, though the file says 2
  cal.nodes["w1"].task_seconds = {{"mm", 0.5}};
  cal.nodes["w1"].link_bandwidth = 2e6;
  cal.nodes["master"].out_bandwidth = 3e6;
  cal.nodes["w2"].cores = 0;                          // unknown: keep the experiment's
  cal.nodes["w2"].link_bandwidth = std::nullopt;      // faster than the probe: unconstrained
  const PlatformModel m = model_from_calibration(experiment(), cal);
  EXPECT_EQ(m.nodes[1].cores, 4u);
  EXPECT_EQ(m.nodes[2].cores, 1u);
  EXPECT_EQ(m.nodes[1].task_seconds[0], 0.5);
  EXPECT_EQ(m.nodes[1].link_bandwidth, 2e6);
  EXPECT_TRUE(std::isinf(m.nodes[2].link_bandwidth));
  EXPECT_EQ(m.nodes[0].max_out_bandwidth, 3e6);
  EXPECT_TRUE(std::isinf(m.nodes[1].max_out_bandwidth));
}

// an application that sends its outputs back carries their calibrated size up
// (the mean over the nodes that measured it); the others carry none.
TEST(ModelFromCalibration, OutputsSentBackCarryTheirMeasuredSize) {
  model::Experiment e = experiment();
  e.apps[0].send_output = true;
  e.apps[0].output_file = "{index}.out";
  model::Calibration cal;
  cal.nodes["w1"].task_seconds = {{"mm", 0.5}};
  cal.nodes["w1"].output_bytes = {{"mm", 1000.0}, {"wide", 5.0}};
  cal.nodes["w2"].task_seconds = {{"mm", 0.5}};
  cal.nodes["w2"].output_bytes = {{"mm", 3000.0}};
  const PlatformModel m = model_from_calibration(e, cal);
  EXPECT_DOUBLE_EQ(m.apps[0].result_bytes, 2000.0);
  EXPECT_EQ(m.apps[1].result_bytes, 0.0);  // "wide" sends no outputs back: a stray size is ignored
  EXPECT_EQ(model_from_calibration(experiment(), cal).apps[0].result_bytes, 0.0);
  PlatformModel bad = m;
  bad.apps[0].result_bytes = -1;
  try {
    validate(bad);
    FAIL() << "a negative result_bytes was accepted";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("result_bytes"), std::string::npos) << err.what();
  }
}

// on one host a link is the host's CPUs copying bytes; its probe rounds are
// slowed by everything else on those CPUs, which the host row charges: the link is bounded
// by its fastest round (none resolved: unconstrained) — unless asked (the pessimistic end
// of the interval). So is a node's measured aggregate output when all its children are on
// its host (the host row charges those sends); with a child elsewhere it stays a bound.
TEST(ModelFromCalibration, LinksWithinOneHostTakeTheirFastestRound) {
  model::Calibration cal;
  cal.hosts["h"] = model::HostCalibration{2.0, 1e-9, 0.5};
  cal.hosts["g"] = model::HostCalibration{4.0, 1e-9, 0.5};
  for (const char* n : {"master", "w1", "w2"}) cal.nodes[n].host = "h";
  cal.nodes["w1"].link_bandwidth = 2e6;  // no fastest round recorded
  cal.nodes["w2"].link_bandwidth = 5e6;
  cal.nodes["w2"].link_bandwidth_min = 1e6;
  cal.nodes["w2"].link_bandwidth_max = 8e6;
  cal.nodes["master"].out_bandwidth = 3e6;
  const PlatformModel m = model_from_calibration(experiment(), cal);
  EXPECT_TRUE(std::isinf(m.nodes[1].link_bandwidth));
  EXPECT_EQ(m.nodes[2].link_bandwidth, 8e6);
  EXPECT_TRUE(std::isinf(m.nodes[0].max_out_bandwidth));
  const PlatformModel bound = model_from_calibration(experiment(), cal, true);
  EXPECT_EQ(bound.nodes[1].link_bandwidth, 2e6);
  EXPECT_EQ(bound.nodes[2].link_bandwidth, 5e6);
  EXPECT_EQ(bound.nodes[0].max_out_bandwidth, 3e6);

  // w1 on another machine: its link is a link, and the master's output a bound.
  cal.nodes["w1"].host = "g";
  const PlatformModel split = model_from_calibration(experiment(), cal);
  EXPECT_EQ(split.nodes[1].link_bandwidth, 2e6);
  EXPECT_EQ(split.nodes[2].link_bandwidth, 8e6);
  EXPECT_EQ(split.nodes[0].max_out_bandwidth, 3e6);

  // Without hosts (older files) the medians.
  for (const char* n : {"master", "w1", "w2"}) cal.nodes[n].host.clear();
  cal.hosts.clear();
  const PlatformModel lan = model_from_calibration(experiment(), cal);
  EXPECT_EQ(lan.nodes[1].link_bandwidth, 2e6);
  EXPECT_EQ(lan.nodes[2].link_bandwidth, 5e6);
}

TEST(ModelFromCalibration, WholeTaskCostsFreeTheLinksWithinTheirHost) {
  // docs/lp.md, "Whole tasks measured through the runtime"): a host whose
  // tasks' whole CPU was measured through the runtime has no link bound inside it, not
  // even at the interval's pessimistic end; the cost reaches the model per application.
  model::Calibration cal;
  cal.hosts["h"] = model::HostCalibration{2.0, 1e-9, 0.5};
  cal.hosts["h"].task_cpu_seconds = {{"mm", 4e-3}, {"gone", 1.0}};  // an app no longer in the file: ignored
  for (const char* n : {"master", "w1", "w2"}) cal.nodes[n].host = "h";
  cal.nodes["w1"].link_bandwidth = 2e6;
  cal.nodes["w2"].link_bandwidth = 5e6;
  cal.nodes["w2"].link_bandwidth_min = 1e6;
  cal.nodes["w2"].link_bandwidth_max = 8e6;
  for (const bool bind : {false, true}) {
    const PlatformModel m = model_from_calibration(experiment(), cal, bind);
    EXPECT_TRUE(std::isinf(m.nodes[1].link_bandwidth)) << bind;
    EXPECT_TRUE(std::isinf(m.nodes[2].link_bandwidth)) << bind;
    ASSERT_EQ(m.hosts[0].task_cpu_seconds.size(), 2u);
    EXPECT_EQ(m.hosts[0].task_cpu_seconds[0], 4e-3);
    EXPECT_EQ(m.hosts[0].task_cpu_seconds[1], 0.0);  // "wide": not measured
  }
  // w2 on a host without such costs: its link keeps its probe.
  cal.hosts["g"] = model::HostCalibration{4.0, 1e-9, 0.5};
  cal.nodes["w2"].host = "g";
  EXPECT_EQ(model_from_calibration(experiment(), cal, true).nodes[2].link_bandwidth, 5e6);
}

// Twins (one host, the same CPUs, cores and share: the quickstart's workers sharing both
// CPUs) run the same kernels on the same hardware: each takes the mean of their measured
// task times, so that the plan does not give one of them every task on the calibration's
// noise; a node on other CPUs keeps its own.
TEST(ModelFromCalibration, TwinsOnTheSameCpusShareTheMeanOfTheirTaskTimesAndTheirPlanSplits) {
  model::Experiment e;
  e.nodes.push_back(node("master", std::nullopt, 0, std::nullopt, std::nullopt));
  for (const char* w : {"w1", "w2", "w3"}) e.nodes.push_back(node(w, "master", 1, std::nullopt, std::nullopt));
  e.apps.push_back(matmul_app());
  model::Calibration cal;
  cal.hosts["h"] = model::HostCalibration{2.0, 1e-9, 0.5};
  cal.nodes["master"].host = "h";
  const std::map<std::string, double> seconds{{"w1", 2.0e-3}, {"w2", 2.4e-3}, {"w3", 1.0e-3}};
  for (const auto& [w, t] : seconds) {
    auto& nc = cal.nodes[w];
    nc.host = "h";
    nc.cores = 1;
    nc.cpu_share = 0.5;
    nc.cpus = {0, 1};
    nc.task_seconds["mm"] = t;
  }
  cal.nodes["w3"].cpus = {1};  // pinned elsewhere: not a twin
  cal.nodes["w3"].cpu_share = 1.0;
  const PlatformModel m = model_from_calibration(e, cal);
  EXPECT_DOUBLE_EQ(m.nodes[1].task_seconds[0], 2.2e-3);
  EXPECT_DOUBLE_EQ(m.nodes[2].task_seconds[0], 2.2e-3);
  EXPECT_DOUBLE_EQ(m.nodes[3].task_seconds[0], 1.0e-3);

  // w3 away, the twins' plan: the same rate each (before, w1's 2.0 ms took every task its
  // core allowed and w2 the rest).
  e.nodes.pop_back();
  cal.nodes.erase("w3");
  const Solution s = solve(model_from_calibration(e, cal));
  ASSERT_GT(s.fair_throughput, 0.0);
  EXPECT_NEAR(s.alpha[1][0], s.alpha[2][0], 1e-6 * s.fair_throughput);
}

TEST(ModelFromExperiment, ForwardOnlyNodeNeedsNoSpeed) {
  model::Experiment e = experiment();
  e.nodes[0].cores = 0;
  e.nodes[0].speed.reset();
  const PlatformModel m = model_from_experiment(e);
  EXPECT_FALSE(m.can_run(0, 0));
  EXPECT_TRUE(std::isinf(m.nodes[0].task_seconds[0]));
}

/// Expects model_from_experiment(e) to throw std::invalid_argument whose message contains
/// every one of `parts`.
void expect_error(const model::Experiment& e, std::initializer_list<std::string> parts) {
  try {
    model_from_experiment(e);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& err) {
    for (const auto& p : parts) EXPECT_NE(std::string(err.what()).find(p), std::string::npos) << err.what();
  }
}

TEST(ModelFromExperiment, ZeroOrNegativeBandwidthNamesNodeAndField) {
  model::Experiment e = experiment();
  e.nodes[1].bandwidth = 0.0;
  expect_error(e, {"'w1'", "bandwidth"});
  e.nodes[1].bandwidth = -5.0;
  expect_error(e, {"'w1'", "bandwidth", "-5"});
  e = experiment();
  const MeasuredBandwidth bad{{"w2", 0.0}};
  EXPECT_THROW(model_from_experiment(e, nullptr, &bad), std::invalid_argument);
}

TEST(ModelFromExperiment, ZeroOrNegativeSpeedNamesNodeAndField) {
  model::Experiment e = experiment();
  e.nodes[2].speed = 0.0;
  expect_error(e, {"'w2'", "speed"});
  e.nodes[2].speed = -1e9;
  expect_error(e, {"'w2'", "speed"});
  e.nodes[2].speed.reset();  // computes, no speed, no measure
  // names the file, the node's line and the field, and says what to give.
  e.path = "x.toml";
  e.nodes[2].line = 12;
  try {
    (void)model_from_experiment(e);
    FAIL() << "a computing node without speed accepted";
  } catch (const model::FileError& err) {
    EXPECT_EQ(err.field(), "node[2].speed");
    EXPECT_EQ(std::string(err.what()).rfind("x.toml:12: ", 0), 0u) << err.what();
    EXPECT_NE(std::string(err.what()).find("'w2'"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("--calibration"), std::string::npos) << err.what();
  }
}

TEST(ModelFromExperiment, AppNoNodeCanRunNamesTheApp) {
  model::Experiment e = experiment();
  e.apps[1].cores_per_task = 8;  // more than any node has
  expect_error(e, {"'wide'", "no node can run"});
  e = experiment();
  e.apps.push_back(abstract_app("idle", 10, 0.0));  // no flop and no measured duration
  expect_error(e, {"'idle'", "no node can run"});
}

TEST(ModelFromExperiment, BadTreeAndWeightAreErrors) {
  model::Experiment e = experiment();
  e.nodes[1].parent = "nobody";
  expect_error(e, {"'w1'", "parent"});
  e = experiment();
  e.apps[0].weight = 0.0;
  expect_error(e, {"'mm'", "weight"});
  e = experiment();
  e.run.max_out_bandwidth = -1.0;
  expect_error(e, {"max_out_bandwidth"});
}


// What the simulator charges a calibrated host per task (docs/simulation.md, "Calibration"):
// the host row's task terms plus every move on the task's way that the host pays for.
TEST(OwnHostCpuPerTask, AddsEveryMoveOnTheTasksWayThatItsHostPays) {
  PlatformModel m;
  m.apps.push_back(PlatformModel::App{"a", 1e6, 1.0, 1, 0, 1e3});  // 1 MB in, 1 kB back
  // master -> w1 -> w1a on host "vm"; w1 -> far, far on a host of its own.
  const auto node = [](const char* name, int parent, std::uint32_t cores, int host) {
    PlatformModel::Node n;
    n.name = name;
    n.parent = parent;
    n.cores = cores;
    n.link_bandwidth = parent < 0 ? std::numeric_limits<double>::infinity() : 1e9;
    n.task_seconds = {cores ? 0.01 : 0.0};
    n.host = host;
    n.cpu_share = host == 0 ? 0.5 : 1.0;
    return n;
  };
  m.nodes = {node("master", -1, 0, 0), node("w1", 0, 1, 0), node("w1a", 1, 1, 0), node("far", 1, 1, 1)};
  const double gamma = 1e-9, iota = 2e-10, rho = 3e-10;
  m.hosts.push_back(PlatformModel::Host{"vm", 2.0, gamma, iota, rho, {}});
  m.hosts.push_back(PlatformModel::Host{"far", 1.0, gamma, iota, rho, {}});
  const double hop = gamma * (1e6 + 1e3);
  // w1a: its kernel at its share, the input's reception and generation (the origin is on
  // its host), and both hops whole (both ends on "vm").
  EXPECT_NEAR(own_host_cpu_per_task(m, 2, 0), 0.01 * 0.5 + rho * 1e6 + iota * 1e6 + 2 * hop, 1e-12);
  EXPECT_NEAR(own_host_cpu_per_task(m, 1, 0), 0.01 * 0.5 + rho * 1e6 + iota * 1e6 + hop, 1e-12);
  // far: its kernel and reception; only its half of its own hop (its parent is elsewhere),
  // nothing of master -> w1 and no generation (the origin is on another host).
  EXPECT_NEAR(own_host_cpu_per_task(m, 3, 0), 0.01 + rho * 1e6 + hop / 2, 1e-12);
  // A whole-task cost measured one hop from the origin replaces the terms: the hop it
  // includes is not charged twice, the second hop is added.
  m.hosts[0].task_cpu_seconds = {0.02};
  EXPECT_NEAR(own_host_cpu_per_task(m, 1, 0), 0.02, 1e-12);
  EXPECT_NEAR(own_host_cpu_per_task(m, 2, 0), 0.02 + hop, 1e-12);
  // Never below the kernel at the node's share, plus the moves.
  m.hosts[0].task_cpu_seconds = {1e-6};
  EXPECT_NEAR(own_host_cpu_per_task(m, 1, 0), 0.01 * 0.5 + hop, 1e-12);
  // A host whose tree reads its inputs in place from shared memory: the hop from the origin
  // (which makes each input straight into the child's slot) moves only the 1 kB output at
  // γ, so a whole cost below kernel + γ·(input + output) is charged as measured; the hop
  // after it (a forwarder's copy) moves both.
  m.hosts[0].shared_inputs = true;
  m.hosts[0].task_cpu_seconds = {0.0055};
  EXPECT_DOUBLE_EQ(hop_bytes(m, m.hosts[0], 1, 0, 0), 1e3);
  EXPECT_DOUBLE_EQ(hop_bytes(m, m.hosts[0], 2, 1, 0), 1e6 + 1e3);
  EXPECT_DOUBLE_EQ(hop_bytes(m, m.hosts[1], 1, 0, 0), 1e6 + 1e3) << "another host: a socket's move";
  EXPECT_NEAR(own_host_cpu_per_task(m, 1, 0), 0.0055, 1e-12);
  EXPECT_NEAR(own_host_cpu_per_task(m, 2, 0), 0.0055 + hop, 1e-12);
  m.hosts[0].shared_inputs = false;
  EXPECT_NEAR(own_host_cpu_per_task(m, 1, 0), 0.01 * 0.5 + hop, 1e-12) << "the same cost through sockets: kernel + hop";
  // A node on no host: its kernel alone.
  m.nodes[3].host = -1;
  EXPECT_NEAR(own_host_cpu_per_task(m, 3, 0), 0.01, 1e-12);
}

}  // namespace
}  // namespace treefarm::lp
