// Tests of runtime/lp/SteadyState.hpp: LP (3) of beaumont2006 §3.1 on platforms whose
// optimum is derived by hand in each test.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "runtime/lp/RandomTree.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "TestPlatforms.hpp"

namespace treefarm::lp {
namespace {

using testing::Builder;
using testing::inf;
using model::CommModel;

/// |actual - expected| <= 1e-6 · max(1, |expected|).
void expect_rel(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-6 * std::max(1.0, std::abs(expected)));
}

bool is_saturated(const Solution& s, std::size_t node, Resource r) {
  return std::any_of(s.saturated.begin(), s.saturated.end(),
                     [&](const Saturation& x) { return x.node == node && x.resource == r; });
}

TEST(SteadyState, OneNode) {
  // 4 cores, 2 s per task: 4 / 2 = 2 tasks/s.
  Builder b;
  b.app("a", 1e6);
  b.node("root", -1, 4, inf, {2.0});
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0);
  expect_rel(s.app_throughput[0], 2.0);
  expect_rel(s.alpha[0][0], 2.0);
  expect_rel(s.cpu_utilisation[0], 1.0);
  EXPECT_TRUE(is_saturated(s, 0, Resource::cpu));
}

TEST(SteadyState, MultiCoreTasksPackInWholeSlots) {
  // 3 cores, tasks of 2 cores taking 1 s: one task at a time (the executor runs whole
  // tasks), so 1 task/s, as the simulation; fractional packing would give 3/2 = 1.5.
  Builder b;
  b.app("a", 10, 1.0, 2);
  b.node("root", -1, 3, inf, {1.0});
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 1.0);
  expect_rel(s.cpu_utilisation[0], 1.0);  // its one slot is busy
  EXPECT_TRUE(is_saturated(s, 0, Resource::cpu));
  // 4 cores: 2 cores per task divide them, 2 tasks/s.
  Builder d;
  d.app("a", 10, 1.0, 2);
  d.node("root", -1, 4, inf, {1.0});
  expect_rel(solve(d.m).fair_throughput, 2.0);
  // Two applications on 3 cores, A of 2 cores, B of 1, 1 s each, equal weights: A ≤ 1
  // slot, 2·α_A + α_B ≤ 3, α_A = α_B = T  =>  T = 1 (one A beside one B).
  Builder e;
  e.app("A", 10, 1.0, 2).app("B", 10, 1.0, 1);
  e.node("root", -1, 3, inf, {1.0, 1.0});
  expect_rel(solve(e.m).fair_throughput, 1.0);
}

TEST(SteadyState, WeightsOneToThree) {
  // 6 cores; X takes 2 s (w = 1), Y 1 s (w = 3). α_X = T, α_Y = 3T,
  // 2·T + 1·3T <= 6  =>  T = 1.2, α_X = 1.2, α_Y = 3.6.
  Builder b;
  b.app("X", 10, 1.0).app("Y", 10, 3.0);
  b.node("root", -1, 6, inf, {2.0, 1.0});
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 1.2);
  expect_rel(s.app_throughput[0], 1.2);
  expect_rel(s.app_throughput[1], 3.6);
}

/// root (0 cores) -> A (b = 100 B/s, 4 cores, 1 s/task), B (b = 50 B/s, 1 core, 1 s/task);
/// one application of 50 bytes per task.
Builder two_worker_star(CommModel comm, double max_out = inf) {
  Builder b;
  b.comm(comm).app("a", 50);
  b.node("root", -1, 0, inf, {inf}, max_out);
  b.node("A", 0, 4, 100, {1.0});
  b.node("B", 0, 1, 50, {1.0});
  return b;
}

TEST(SteadyState, TwoWorkerStarOnePort) {
  // Port time of the root: α_A·50/100 + α_B·50/50 <= 1; α_A <= 4, α_B <= 1.
  // A costs 0.5 s of port per task, B 1 s: give the port to A, α_A = 2, α_B = 0 -> 2.
  const Builder b = two_worker_star(CommModel::one_port);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0);
  expect_rel(s.alpha[1][0], 2.0);
  expect_rel(s.alpha[2][0], 0.0);
  expect_rel(s.sent[1][0], 2.0);
  expect_rel(s.port_utilisation[0], 1.0);
  expect_rel(s.link_utilisation[1], 1.0);
  expect_rel(s.cpu_utilisation[1], 0.5);
  EXPECT_TRUE(is_saturated(s, 0, Resource::port));
  EXPECT_FALSE(is_saturated(s, 1, Resource::cpu));
}

TEST(SteadyState, TwoWorkerStarMultiPort) {
  // Each link alone: α_A·50 <= 100 -> 2 (link-bound, 4 cores idle half the time);
  // α_B·50 <= 50 -> 1, α_B <= 1. Total 3.
  const Builder b = two_worker_star(CommModel::multi_port);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 3.0);
  expect_rel(s.alpha[1][0], 2.0);
  expect_rel(s.alpha[2][0], 1.0);
  EXPECT_TRUE(is_saturated(s, 1, Resource::link));
  EXPECT_TRUE(is_saturated(s, 2, Resource::link));
  EXPECT_TRUE(is_saturated(s, 2, Resource::cpu));
  expect_rel(s.port_utilisation[0], 0.0);  // no max_out_bandwidth
}

TEST(SteadyState, TwoWorkerStarMultiPortWithMaxOut) {
  // Same with max_out_bandwidth 75 B/s at the root: 50·(α_A + α_B) <= 75 -> 1.5.
  const Builder b = two_worker_star(CommModel::multi_port, 75);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 1.5);
  expect_rel(s.port_utilisation[0], 1.0);
  EXPECT_TRUE(is_saturated(s, 0, Resource::out_bandwidth));
}

// ---- outputs sent back (docs/lp.md "Communication") ----------------------

TEST(SteadyState, OutputsLargerThanInputsBindTheLinkUpwards) {
  // Multi-port, one worker behind 1e6 B/s, 1e3 B in and 4e3 B out per task, 1 ms per task:
  // down 1000 tasks/s, up 1e6/4e3 = 250 tasks/s: the way up binds.
  Builder b;
  b.comm(CommModel::multi_port).app("a", 1e3);
  b.node("root", -1, 0, inf, {0.0});
  b.node("w", 0, 1, 1e6, {1e-3});
  expect_rel(solve(b.m).fair_throughput, 1000.0);
  b.m.apps[0].result_bytes = 4e3;
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 250.0);
  expect_rel(s.link_utilisation[1], 1.0);
  EXPECT_TRUE(is_saturated(s, 1, Resource::link));
  // Outputs smaller than inputs travel on the other direction's capacity: no change.
  b.m.apps[0].result_bytes = 500;
  expect_rel(solve(b.m).fair_throughput, 1000.0);
}

TEST(SteadyState, OnePortSendsOutputsUpOnTheSamePortAsTasksDown) {
  // root -> a (forwards, 1e6 B/s) -> w (1e6 B/s, fast): a's one port sends w its tasks
  // (1e-3 s each) and sends their outputs up to the root (1e-3 s each): 500 tasks/s, where
  // without outputs it is 1000.
  Builder b;
  b.app("a", 1e3);
  b.node("root", -1, 0, inf, {0.0});
  b.node("a", 0, 0, 1e6, {0.0});
  b.node("w", 1, 8, 1e6, {1e-6});
  expect_rel(solve(b.m).fair_throughput, 1000.0);
  b.m.apps[0].result_bytes = 1e3;
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 500.0);
  expect_rel(s.port_utilisation[1], 1.0);
  EXPECT_TRUE(is_saturated(s, 1, Resource::port));
}

TEST(SteadyState, OnePortReceivesOneOutputAtATime) {
  // Single-port (beaumont2006 §2: one send and one receive at once): the root receives the
  // outputs of two workers one at a time. Tasks of 10 B, outputs of 1e3 B, links 1e6 B/s,
  // fast workers: each worker alone could send 1000 outputs/s, the root takes 1000 in all.
  Builder b;
  b.app("a", 10);
  b.node("root", -1, 0, inf, {0.0});
  b.node("w1", 0, 8, 1e6, {1e-6});
  b.node("w2", 0, 8, 1e6, {1e-6});
  b.m.apps[0].result_bytes = 1e3;
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 1000.0);
  expect_rel(s.port_utilisation[0], 1.0);
  EXPECT_TRUE(is_saturated(s, 0, Resource::port));
  b.m.comm_model = CommModel::multi_port;  // each link on its own: 2000
  expect_rel(solve(b.m).fair_throughput, 2000.0);
}

TEST(SteadyState, AnOutputFromAnOriginBelowComesDown) {
  // bertin2008 §2.2: an application whose origin is the worker w; the root computes. Its
  // tasks go up w's link, their outputs come down it: outputs of 4e3 B over 1e6 B/s bind
  // at 250 tasks/s (multi-port: the down direction of the link).
  Builder b;
  b.comm(CommModel::multi_port).app("a", 1e3);
  b.node("root", -1, 1, inf, {1e-6});
  b.node("w", 0, 0, 1e6, {0.0});
  b.m.apps[0].origin = 1;
  b.m.apps[0].result_bytes = 4e3;
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 250.0);
  EXPECT_TRUE(is_saturated(s, 1, Resource::link));
}

TEST(SteadyState, HostChargesTheOutputsBytesToo) {
  // One host, gamma 1e-3 CPU-s per byte, a forwarding root and one worker at 1 s per task
  // measured alone: a task costs 1 CPU-s plus gamma·(100 + 400) = 0.5: 2 CPUs / 1.5.
  Builder b;
  b.app("a", 100);
  b.node("root", -1, 0, inf, {0.0});
  b.node("w", 0, 4, inf, {1.0});
  b.m.hosts.push_back(PlatformModel::Host{"here", 2.0, 1e-3});
  for (auto& n : b.m.nodes) n.host = 0;
  b.m.apps[0].result_bytes = 400;
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0 / 1.5);
  expect_rel(s.host_utilisation[0], 1.0);
}

// ---- hosts (docs/lp.md "Hosts") ------------------------------------------

/// The quickstart's shape: a forwarding root and four 1-core workers, all on one 2-CPU
/// host, each pair of workers pinned to one CPU; 1 s per task measured at half a CPU.
Builder quickstart_on_one_host(double gamma) {
  Builder b;
  b.app("a", 100);
  b.node("root", -1, 0, inf, {0.0});
  for (const char* w : {"w1", "w2"}) b.node(w, 0, 1, inf, {1.0});
  b.node("w1a", 1, 1, inf, {1.0});
  b.node("w1b", 1, 1, inf, {1.0});
  b.m.hosts.push_back(PlatformModel::Host{"here", 2.0, gamma});
  for (auto& n : b.m.nodes) n.host = 0;
  const std::vector<std::vector<int>> cpus{{}, {0}, {1}, {0}, {1}};
  for (std::size_t u = 0; u < 5; ++u) {
    b.m.nodes[u].cpus = cpus[u];
    b.m.nodes[u].cpu_share = u == 0 ? 1.0 : 0.5;
  }
  return b;
}

TEST(SteadyState, NodesOnOneHostShareItsCpus) {
  // Alone, each worker would do 1/(1·0.5) = 2 tasks/s (8 in all), but the host has
  // 2 CPUs of which a task takes 0.5 s: 4 tasks/s.
  Builder b = quickstart_on_one_host(0.0);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 4.0);
  ASSERT_EQ(s.host_utilisation.size(), 1u);
  b.m.nodes[0].task_seconds = {inf};  // the forwarding root cannot compute: no NaN
  ASSERT_EQ(solve(b.m).host_utilisation.size(), 1u);
  expect_rel(solve(b.m).host_utilisation[0], 1.0);
  expect_rel(s.host_utilisation[0], 1.0);
  // Without the host (no shared CPU row): every node on its own CPU at the
  // measured 1 s per task: 4 tasks/s too, but for the wrong reason — make one worker
  // unable to compute and the host row lets its CPU-mate take the whole CPU.
  Builder c = quickstart_on_one_host(0.0);
  c.m.nodes[3].cores = 0;  // w1a forwards only: w1 has CPU 0 alone
  expect_rel(solve(c.m).fair_throughput, 4.0);
  for (auto& n : c.m.nodes) n.host = -1;
  c.m.hosts.clear();
  expect_rel(solve(c.m).fair_throughput, 6.0);  // 3 workers at 2 tasks/s: more than 2 CPUs give
}

TEST(SteadyState, HostChargesTheCpuOfEveryTransfer) {
  // gamma = 1 ms per byte of 100-byte tasks: a hop costs 0.1 CPU-s. Tasks to w1 and w2 take
  // one hop, to w1a and w1b two. With T tasks/s spread as the LP likes: computing costs
  // 0.5 CPU-s per task, so at best (only one-hop tasks) 0.6 CPU-s per task: T = 2/0.6.
  Builder b = quickstart_on_one_host(1e-3);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0 / 0.6);
  expect_rel(s.alpha[3][0] + s.alpha[4][0], 0.0);  // two hops cost more: the leaves idle
  expect_rel(s.host_utilisation[0], 1.0);
}

TEST(SteadyState, HostChargesEachInputsGenerationAndReceptionOnce) {
  // As above (gamma 1 ms per byte, 100-byte tasks: 0.1 CPU-s a hop), plus what the runtime
  // spends at the two ends of a task's way, per input byte and whatever the hops: 0.5 ms
  // generating it at the origin (the root, on this host) and 1.5 ms receiving it where it
  // is computed — 0.2 CPU-s per task. Best: one-hop tasks at 0.5 + 0.1 + 0.2 = 0.8 CPU-s.
  Builder b = quickstart_on_one_host(1e-3);
  b.m.hosts[0].input_cpu_seconds_per_byte = 0.5e-3;
  b.m.hosts[0].receive_cpu_seconds_per_byte = 1.5e-3;
  Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0 / 0.8);
  expect_rel(s.host_utilisation[0], 1.0);
  // The origin on another host: its generation is not this host's (0.7 CPU-s per task
  // here); that host has CPU to spare (0.05 CPU-s per task of its 1 CPU).
  b.m.hosts.push_back(PlatformModel::Host{"origin", 1.0, 1e-3, 0.5e-3, 1.5e-3});
  b.m.nodes[0].host = 1;
  s = solve(b.m);
  // Transfers root -> w1/w2 now cross hosts: half of gamma on each side (0.05 CPU-s here).
  expect_rel(s.fair_throughput, 2.0 / (0.5 + 0.05 + 0.15));
  expect_rel(s.host_utilisation[1], (0.05 + 0.05) * s.fair_throughput);
  // A task the origin computes itself is received by no one.
  Builder c;
  c.app("a", 100);
  c.node("root", -1, 1, inf, {1.0});
  c.m.hosts.push_back(PlatformModel::Host{"here", 1.0, 0.0, 0.5e-3, 1.5e-3});
  c.m.nodes[0].host = 0;
  expect_rel(solve(c.m).fair_throughput, 1.0 / (1.0 + 0.05));
}

TEST(SteadyState, WholeTaskCostReplacesTheTermsOnItsHost) {
  // The quickstart's shape, gamma 1 ms per byte (0.1 CPU-s a hop of 100-byte tasks), and
  // per-byte end costs that would add 1 CPU-s per task — but the whole cost of a task
  // measured one hop from the root (task_cpu_seconds) is 0.8 CPU-s: it replaces the
  // kernel (0.5) and the end terms, the hop's 0.1 inside it. A one-hop task costs the host
  // 0.8, a two-hop one 0.9: T = 2 / 0.8, the leaves idle.
  Builder b = quickstart_on_one_host(1e-3);
  b.m.hosts[0].input_cpu_seconds_per_byte = 5e-3;
  b.m.hosts[0].receive_cpu_seconds_per_byte = 5e-3;
  b.m.hosts[0].task_cpu_seconds = {0.8};
  Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0 / 0.8);
  expect_rel(s.alpha[3][0] + s.alpha[4][0], 0.0);
  expect_rel(s.host_utilisation[0], 1.0);
  // Never below the kernel: 0.3 measured (less than kernel + hop) charges 0.5 + 0.1.
  b.m.hosts[0].task_cpu_seconds = {0.3};
  expect_rel(solve(b.m).fair_throughput, 2.0 / 0.6);
  // The origin on another host (an emulated LAN: the whole cost measured at the node
  // alone, its half of the hop inside it): w1's and w2's tasks cost this host 0.8 − 0.05
  // + the link term's half hop 0.05 = 0.8; a leaf's 0.8 − 0.1 + 0.05 + 0.1 = 0.85.
  b.m.hosts[0].task_cpu_seconds = {0.8};
  b.m.hosts.push_back(PlatformModel::Host{"origin", 8.0, 1e-3});
  b.m.nodes[0].host = 1;
  s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0 / 0.8);
  expect_rel(s.alpha[3][0] + s.alpha[4][0], 0.0);
  // Without the whole cost, the per-byte terms again (0.5 kernel + 0.05 half hop + 0.5
  // received here = 1.05 per task on this host).
  b.m.hosts[0].task_cpu_seconds.clear();
  expect_rel(solve(b.m).fair_throughput, 2.0 / 1.05);
}

TEST(SteadyState, TwinNodesOnOneHostShareTheOptimum) {
  // w1 and w2 cost the host the same, so any split of the optimum between
  // them is optimal; the second stage takes the one that loads the busiest node least —
  // half each — and keeps T.
  // T = 2 / 0.6 (HostChargesTheCpuOfEveryTransfer); each can take 2 tasks/s, so the
  // vertices of the optimal face are (2, 4/3) and (4/3, 2); the spread plan is (5/3, 5/3).
  Builder b = quickstart_on_one_host(1e-3);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0 / 0.6);
  expect_rel(s.alpha[1][0], s.fair_throughput / 2);
  expect_rel(s.alpha[2][0], s.fair_throughput / 2);
}

TEST(SteadyState, CpuSetSharedByTwoNodesIsOneRow) {
  // Two workers pinned to the same CPU of a 2-CPU host, measured at half of it (1 s per
  // task, 0.5 CPU-s): together they do at most 1/0.5 = 2 tasks/s, though the host has
  // another CPU.
  Builder b;
  b.app("a", 100);
  b.node("root", -1, 0, inf, {0.0});
  b.node("w1", 0, 1, inf, {1.0});
  b.node("w2", 0, 1, inf, {1.0});
  b.m.hosts.push_back(PlatformModel::Host{"here", 2.0, 0.0});
  for (auto& n : b.m.nodes) n.host = 0;
  b.m.nodes[1].cpus = b.m.nodes[2].cpus = {0};
  b.m.nodes[1].cpu_share = b.m.nodes[2].cpu_share = 0.5;
  expect_rel(solve(b.m).fair_throughput, 2.0);
  b.m.nodes[2].cpus = {1};  // on the other CPU: 2 + 2
  expect_rel(solve(b.m).fair_throughput, 4.0);
}

TEST(SteadyState, ChainOfThree) {
  // root (0 cores) -> A (100 B/s, 1 core) -> B (10 B/s, 2 cores), 1 s/task, 10 B/task.
  // A computes 1/s (cpu-bound); B receives at most 10/10 = 1/s (link-bound, 2 cores).
  // sent into A = α_A + sent into B = 2. Same in both models (one child per node).
  for (const CommModel comm : {CommModel::one_port, CommModel::multi_port}) {
    Builder b;
    b.comm(comm).app("a", 10);
    b.node("root", -1, 0, inf, {inf});
    b.node("A", 0, 1, 100, {1.0});
    b.node("B", 1, 2, 10, {1.0});
    const Solution s = solve(b.m);
    expect_rel(s.fair_throughput, 2.0);
    expect_rel(s.alpha[1][0], 1.0);
    expect_rel(s.alpha[2][0], 1.0);
    expect_rel(s.sent[1][0], 2.0);
    expect_rel(s.sent[2][0], 1.0);
    expect_rel(s.link_utilisation[1], 0.2);
    expect_rel(s.cpu_utilisation[2], 0.5);
    EXPECT_TRUE(is_saturated(s, 2, Resource::link));
  }
}

/// root (0 cores) -> I (100 B/s, 1 core) -> L1 (10 B/s), L2 (20 B/s), 1 core each;
/// 1 s per task everywhere, 10 bytes per task.
Builder two_level(CommModel comm) {
  Builder b;
  b.comm(comm).app("a", 10);
  b.node("root", -1, 0, inf, {inf});
  b.node("I", 0, 1, 100, {1.0});
  b.node("L1", 1, 1, 10, {1.0});
  b.node("L2", 1, 1, 20, {1.0});
  return b;
}

TEST(SteadyState, TwoLevelTreeInnerNodeComputesAndForwardsOnePort) {
  // I computes α_I <= 1 and forwards with its one port: s1·10/10 + s2·10/20 <= 1,
  // s1, s2 <= 1. L2 is cheaper (0.5 s per task): s2 = 1 uses half the port, s1 = 0.5.
  // Total 1 + 1 + 0.5 = 2.5; the root's port: 2.5·10/100 = 0.25.
  const Builder b = two_level(CommModel::one_port);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.5);
  expect_rel(s.alpha[1][0], 1.0);
  expect_rel(s.sent[1][0], 2.5);
  expect_rel(s.alpha[2][0], 0.5);
  expect_rel(s.alpha[3][0], 1.0);
  expect_rel(s.port_utilisation[1], 1.0);
  expect_rel(s.port_utilisation[0], 0.25);
  EXPECT_TRUE(is_saturated(s, 1, Resource::port));
  EXPECT_TRUE(is_saturated(s, 1, Resource::cpu));
}

TEST(SteadyState, TwoLevelTreeInnerNodeComputesAndForwardsMultiPort) {
  // Links alone: s1 <= 1, s2 <= 1, and every node computes 1/s: total 3.
  const Builder b = two_level(CommModel::multi_port);
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 3.0);
  expect_rel(s.sent[1][0], 3.0);
  expect_rel(s.alpha[2][0], 1.0);
}

TEST(SteadyState, LoopbackChildCostsNoPort) {
  // Root 1 core + a loopback child (infinite bandwidth) with 2 cores, 1 s/task: 3/s.
  Builder b;
  b.app("a", 1e9);
  b.node("root", -1, 1, inf, {1.0});
  b.node("local", 0, 2, inf, {1.0});
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 3.0);
  expect_rel(s.port_utilisation[0], 0.0);
}

TEST(SteadyState, CoresPerTaskAboveCoresGivesNoTasks) {
  // A task of "big" holds 4 cores. The root (8 cores, 1 s) runs 8 / 4 = 2 per second.
  // The worker is fast (0.1 s) but has 2 cores < 4: it gets none.
  Builder b;
  b.app("big", 1, 1.0, 4);
  b.node("root", -1, 8, inf, {1.0});
  b.node("w", 0, 2, inf, {0.1});
  const Solution s = solve(b.m);
  expect_rel(s.fair_throughput, 2.0);
  EXPECT_EQ(s.alpha[1][0], 0.0);
  EXPECT_EQ(s.sent[1][0], 0.0);
  expect_rel(s.cpu_utilisation[0], 1.0);
}

TEST(SteadyState, ErrorsNameTheFieldOrApp) {
  Builder b = two_worker_star(CommModel::one_port);
  b.m.nodes[2].link_bandwidth = 0.0;
  try {
    solve(b.m);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'B'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bandwidth"), std::string::npos) << e.what();
  }
  b = two_worker_star(CommModel::one_port);
  b.m.nodes[1].link_bandwidth = -1.0;
  EXPECT_THROW(solve(b.m), std::invalid_argument);
  b = two_worker_star(CommModel::one_port);
  b.m.apps[0].cores_per_task = 5;
  try {
    solve(b.m);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("application 'a'"), std::string::npos) << e.what();
  }
}

TEST(SteadyState, JsonAndReport) {
  const Builder b = two_level(CommModel::one_port);
  const Solution s = solve(b.m);
  const nlohmann::json j = to_json(b.m, s);
  EXPECT_NEAR(j["fair_throughput"].get<double>(), 2.5, 1e-6);
  ASSERT_EQ(j["apps"].size(), 1u);
  EXPECT_EQ(j["apps"][0]["name"], "a");
  EXPECT_EQ(j["apps"][0]["weight"], 1.0);
  EXPECT_NEAR(j["apps"][0]["throughput"].get<double>(), 2.5, 1e-6);
  ASSERT_EQ(j["nodes"].size(), 4u);
  EXPECT_EQ(j["nodes"][1]["name"], "I");
  EXPECT_EQ(j["nodes"][1]["parent"], "root");
  EXPECT_NEAR(j["nodes"][2]["apps"]["a"].get<double>(), 0.5, 1e-6);
  EXPECT_NEAR(j["nodes"][1]["port_utilisation"].get<double>(), 1.0, 1e-6);
  const auto sat = j["nodes"][1]["saturated"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(sat.begin(), sat.end(), "cpu"), sat.end());
  EXPECT_NE(std::find(sat.begin(), sat.end(), "port"), sat.end());
  EXPECT_TRUE(j["nodes"][0]["saturated"].empty());

  std::ostringstream text;
  print_report(text, b.m, s);
  EXPECT_NE(text.str().find("fair throughput 2.5 tasks/s"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("cpu,port"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace treefarm::lp

namespace treefarm::lp {
namespace {

TEST(SteadyState, TimeScaleInvariant) {
  // Slowing every resource by 10^4 (durations ×10^4, bandwidths ×10^-4) divides every
  // rate by 10^4: the optimum must follow to 1e-6 relative, at tiny rates too (Clp's
  // tolerances are absolute).
  for (const model::CommModel comm : {model::CommModel::one_port, model::CommModel::multi_port}) {
    PlatformModel m = random_tree(200, 4, 7, comm);
    const double fast = solve(m).fair_throughput;
    for (auto& node : m.nodes) {
      for (double& t : node.task_seconds) t *= 1e4;
      node.link_bandwidth *= 1e-4;
      node.max_out_bandwidth *= 1e-4;
    }
    const double slow = solve(m).fair_throughput;
    EXPECT_NEAR(slow * 1e4, fast, 1e-6 * fast);
  }
}

}  // namespace
}  // namespace treefarm::lp
