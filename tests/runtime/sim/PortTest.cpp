// The sender's port in simulation (beaumont2006 §4.4): concurrent sends share it, so no
// policy's simulated throughput exceeds the LP optimum of the model it runs under.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "runtime/core/Policy.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/sim/PlatformBuilder.hpp"
#include "runtime/sim/Simulation.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"
#include "tools/simulate/GenPlatform.hpp"

namespace treefarm::sim {
namespace {

using test::experiment;

// One-port star, three communication-bound applications: each task is 1 MB over a
// 1 MB/s link and 1 Mflop on a 1 Gflop/s core. The master sends one task per second in
// all, so the one-port optimum is 1/3 task/s per application (fair throughput 1/3).
// PBC sends up to three tasks at once (one per application); before the port was
// shared, each had its own link and PBC reached 3x the optimum.
// A one-port star under "pbc": the master (no cores) and w1, w2, w3 of one 1 Gflop/s
// core, w2 and w3 behind 1 MB/s links, w1 behind `w1_bandwidth`; applications a, b, c
// of `tasks` tasks of 1 MB and `flops` each; `run_extra` appended to [run].
std::string pbc_star(const std::string& w1_bandwidth, const std::string& flops, int tasks,
                     const std::string& run_extra = "") {
  std::string text = "[[node]]\nname = \"m\"\ncores = 0\n";
  for (const auto& [name, bandwidth] : {std::pair<std::string, std::string>{"w1", w1_bandwidth}, {"w2", "1MBps"}, {"w3", "1MBps"}})
    text += "[[node]]\nname = \"" + name + "\"\nparent = \"m\"\ncores = 1\nspeed = \"1Gf\"\nbandwidth = \"" + bandwidth + "\"\n";
  for (const char* app : {"a", "b", "c"})
    text += std::string("[[app]]\nname = \"") + app + "\"\nbytes = \"1MB\"\nflops = \"" + flops + "\"\ntasks = " +
            std::to_string(tasks) + "\n";
  return text + "[run]\ncomm_model = \"one-port\"\npolicy = \"pbc\"\n" + run_extra;
}

const std::string comm_bound_star = pbc_star("1MBps", "1Mf", 60);

TEST(SimPort, OnePortNeedsNoPortLink) {
  // One task on the wire at a time (NodeActor) keeps the one-port rule; a port link is
  // only the bounded multi-port's max_out_bandwidth.
  const auto p = make_sim_platform(experiment(comm_bound_star));
  EXPECT_DOUBLE_EQ(port_bandwidth(p, 0), 0.0);
  EXPECT_DOUBLE_EQ(port_bandwidth(p, 1), 0.0);
}

TEST(SimPort, PbcNeverExceedsTheOnePortOptimum) {
  const auto o = simulate(make_sim_platform(experiment(comm_bound_star)));
  ASSERT_TRUE(o.completed) << o.error;
  ASSERT_TRUE(o.results.predicted_fair_throughput);
  EXPECT_NEAR(*o.results.predicted_fair_throughput, 1.0 / 3.0, 1e-9);
  EXPECT_LE(o.results.fair_throughput, *o.results.predicted_fair_throughput * 1.02);
  // ...and it does use the port: well above a third of the optimum.
  EXPECT_GT(o.results.fair_throughput, *o.results.predicted_fair_throughput * 0.8);
}

// The one-port rule itself, from the run's records: every task computed below the
// master crossed the master's port once, needing bytes / bandwidth of the first link on
// its way; shared in time (LP (3)'s one-port row: Σ_v sent_v·b / b_v <= 1), those
// times add up to at most the run's duration. Exact: no window, no tolerance but
// rounding. (Latencies are left out: "pbc"'s concurrent sends overlap them.)
double master_port_seconds(const SimPlatform& p, const metrics::RunResults& r) {
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t u = 0; u < p.nodes.size(); ++u) index[p.nodes[u].name] = u;
  double busy = 0;
  for (const auto& t : r.tasks) {
    std::size_t u = index.at(t.node);
    if (p.nodes[u].parent < 0) continue;  // computed by the master
    while (p.nodes[static_cast<std::size_t>(p.nodes[u].parent)].parent >= 0) u = static_cast<std::size_t>(p.nodes[u].parent);
    busy += static_cast<double>(p.experiment.apps.at(t.app).input_bytes()) / p.nodes[u].bandwidth;
  }
  return busy;
}

// One-port star with unequal links: w1's link is twice as fast as w2's and w3's. Every
// task is 1 MB and 1 Gflop (1 s on any worker); the master computes nothing. The
// one-port optimum: w1 takes 1 task/s (half the port's time), w2 the other half
// (0.5 task/s): 1.5 tasks/s in all, fair throughput 0.5 per application. A port link
// of the fastest child's bandwidth (2 MB/s, a port per link rather than one) let PBC
// send to w1 at 1 MB/s and to w2 and w3 at 0.5 MB/s each at once: 2 tasks/s, 4/3 of the
// optimum (0.665 measured), the master's port busy 1.66 s per second. Shared in time,
// three sends in flight go at 2/3, 1/3 and 1/3 MB/s.
const std::string unequal_star = pbc_star("2MBps", "1Gf", 300, "buffer = 2\n");

// The slack of the measurement (§5.1.1: completions in [εT, (1−ε)T] over (1−2ε)T): a
// task completed in the window was either sent in it, or was already past the port at
// εT — held by a worker (at most `buffer` tasks buffered or arriving, plus one per core
// running) — and a send in progress at either edge counts whole. Per worker that is at
// most (buffer + cores + 1) tasks beyond what the window's time allows, each worth at
// most `longest` seconds of the port or of a core, so the window's rates fit the LP's
// constraints with every capacity raised by that many seconds over the window: the LP
// optimum scaled by 1 + workers·(buffer + cores + 1)·longest / window.
double window_slack(const SimPlatform& p, const metrics::RunResults& r, double longest) {
  std::size_t workers = 0, cores = 0;
  for (const auto& n : p.nodes)
    if (n.parent >= 0) {
      ++workers;
      cores = std::max<std::size_t>(cores, n.cores);
    }
  const double window = (1 - 2 * r.epsilon) * r.steady_end;
  return static_cast<double>(workers * (p.experiment.run.buffer + cores + 1)) * longest / window;
}

TEST(SimPort, PbcConcurrentSendsToUnequalLinksShareTheOnePortInTime) {
  const auto p = make_sim_platform(experiment(unequal_star));
  const double optimum = lp::solve(p.model).fair_throughput;
  ASSERT_NEAR(optimum, 0.5, 1e-9);
  const auto o = simulate(p);
  ASSERT_TRUE(o.completed) << o.error;
  const double slack = window_slack(p, o.results, 1.0);  // a task: 1 s on a core, <= 1 s on the port
  EXPECT_LT(slack, 0.05);  // the run is long enough for the bound to mean something
  EXPECT_LE(o.results.fair_throughput, optimum * (1 + slack)) << "slack " << slack;
  EXPECT_LE(master_port_seconds(p, o.results), o.results.duration * (1 + 1e-9));
  // ...and the port is used: PBC serves w2 and w3 as well as w1 (0.89 of the optimum
  // when written; 0.80 when its sends queued one after the other, first come first
  // served, and a slow transfer held up the fast ones).
  EXPECT_GT(o.results.fair_throughput, optimum * 0.85);
}

// The campaign's platform n10-d15-t6 with the paper's task sizes (`treefarm experiment
// paper --task-sizes paper`; 98 MB tasks over 14–875 kB/s links): PBC measured 1.084
// of the one-port optimum there before the fix, its master's port busy 1.55 s per
// second of the run.
TEST(SimPort, PbcStaysUnderTheOptimumOnTheCampaignStarItBeat) {
  simulate::GenOptions g;
  g.nodes = 10;
  g.max_degree = 15;
  g.apps = 3;
  g.seed = 6070254309282488605ULL;  // campaign seed 2006, platform n10-d15-t6
  g.ccr_max = 0.002488962879580912;
  g.task_sizes = simulate::GenOptions::TaskSizes::paper_matrices;
  auto ex = experiment(simulate::generate_platform(g));
  ex.run.policy = "pbc";
  const auto p = make_sim_platform(ex);
  auto model = p.model;  // the paper's LP (3), as the campaign: no latency rows
  for (auto& n : model.nodes) n.request_round_trip = n.port_hold = 0.0;
  const double optimum = lp::solve(model).fair_throughput;
  const auto o = simulate(p);
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_LE(master_port_seconds(p, o.results), o.results.duration * (1 + 1e-9));
  EXPECT_LE(o.results.fair_throughput, optimum) << "optimum " << optimum << " tasks/s";
}

// The LP bound of the model a policy runs under: the experiment's own LP, for every
// policy ("pbc" included: its concurrent sends share the one-port in time).
double lp_bound(const SimPlatform& p) { return lp::solve(p.model).fair_throughput; }

// Property over random platforms (gen-platform, beaumont2006 §5.1): no policy's
// simulated fair throughput exceeds the LP optimum of its model by more than 3% (the
// finite run's measurement window, §5.1.1, is the only slack).
TEST(SimPort, NoPolicyBeatsTheLpOfItsModel) {
  constexpr double tolerance = 0.03;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    simulate::GenOptions g;
    g.nodes = 6;
    g.apps = 3;
    g.seed = seed;
    g.tasks = 60;
    g.latency_max = 0.01;  // short runs; latency only lowers throughput anyway
    g.latency_min = 0.001;
    const auto base = experiment(simulate::generate_platform(g));
    for (const auto& policy : core::policy_names()) {
      auto ex = base;
      ex.run.policy = policy;
      const auto p = make_sim_platform(ex);
      const double bound = lp_bound(p);
      const auto o = simulate(p);
      ASSERT_TRUE(o.completed) << "seed " << seed << " " << policy << ": " << o.error;
      if (p.model.comm_model == model::CommModel::one_port) {
        EXPECT_LE(master_port_seconds(p, o.results), o.results.duration * (1 + 1e-9)) << "seed " << seed << " " << policy;
      }
      EXPECT_LE(o.results.fair_throughput, bound * (1 + tolerance))
          << "seed " << seed << ", policy " << policy << ": simulated " << o.results.fair_throughput
          << " tasks/s, LP bound " << bound;
    }
  }
}

}  // namespace
}  // namespace treefarm::sim
