#pragma once
/// @file Simulation.hpp
/// The SimGrid adapter: runs an experiment on a simulated platform (SimGrid 3.32 S4U),
/// one actor per node driving that node's core::NodeScheduler, exactly as the ZeroMQ
/// adapter drives it for real. Times are simulated seconds. docs/simulation.md.
///
/// SimGrid's engine is a process-wide singleton that cannot be restarted: simulate()
/// runs each simulation in a forked child process and reads the outcome back through a
/// pipe, so a process may run any number of simulations, one after the other or several
/// at once. simulate_in_this_process() is the child's side, usable once per process.

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/metrics/Results.hpp"
#include "runtime/sim/SimPlatform.hpp"

namespace treefarm::sim {

struct SimulationOptions {
  /// Stop the simulation at this simulated time (seconds) even if tasks remain; they
  /// count as lost. 0 = no limit.
  double time_limit = 0;
  /// Stop after this much wall-clock time (seconds), reporting what was reached (the
  /// root checks it whenever it wakes up). 0 = no limit.
  double wall_limit = 0;
  /// SimGrid network model. "CM02" uses link bandwidths and latencies as given; SimGrid's
  /// default "LV08" multiplies latencies by 13.01 and bandwidths by 0.97 (TCP fit).
  std::string network_model = "CM02";
  /// Size of a request or result message, bytes (they also pay the link latency).
  double control_bytes = 64;
  /// Stack of each actor (KiB): 10,000 nodes are 10,000 actors.
  std::uint32_t stack_kib = 1024;
  /// Policy lp, one origin: calibrate as you go (docs/live-model.md) — the run starts
  /// without the LP's plan (FCFS) and the root makes it from the nodes' online estimates
  /// once they are tight (lp::EstimatePlan); the prediction is then that plan's optimum.
  bool plan_from_estimates = false;
};

/// What one simulation produced.
struct SimulationOutcome {
  metrics::RunResults results;   ///< Simulated seconds; predicted/predicted_fair_throughput from the LP.
  bool completed = false;        ///< Every task recorded at the root.
  std::string error;             ///< Why it stopped early (deadlock, time limit, core error), "" if not.
  double simulated_seconds = 0;  ///< Simulated clock at the end.
  double wall_seconds = 0;       ///< Wall time of the simulation (platform building included).
  double setup_seconds = 0;      ///< Part of wall_seconds spent building the platform and actors.
  double lp_seconds = 0;         ///< Wall time of the LP prediction.
  long max_rss_kib = 0;          ///< Peak resident memory of the simulating process (getrusage).
  std::uint64_t events = 0;      ///< Events handled by all node schedulers.
  /// The root policy's own expected fair throughput at the end of the run, tasks/s
  /// (core::Policy::planned_fair_throughput; DATA-CENTRIC), if it computes one.
  std::optional<double> policy_planned_fair_throughput;
};

/// SimGrid 3.32 gives each actor (one per node and origin tree) a stack in a memory
/// mapping of its own plus a guard page: two mappings each. Linux caps a process's
/// mappings at vm.max_map_count (65,530 by default), beyond which SimGrid aborts while it
/// creates the actors. Returns why `actors` actors cannot run under `limit` mappings, or
/// "" when they can (limit <= 0: unknown, no check).
std::string map_count_problem(std::size_t actors, long limit);

/// Simulates the platform in a forked child process (safe to call any number of times).
/// The LP prediction (lp::solve on platform.model) is computed in the parent and put
/// beside the measured throughputs. Throws std::runtime_error if the child dies or the
/// simulation cannot be set up (the message says why), map_count_problem's among them.
SimulationOutcome simulate(const SimPlatform& platform, const SimulationOptions& options = {});

/// Runs the simulation in this process: at most once per process (SimGrid's engine
/// cannot be re-created). No LP prediction. Throws std::logic_error on a second call.
SimulationOutcome simulate_in_this_process(const SimPlatform& platform, const SimulationOptions& options = {});

/// Puts the LP optimum (lp::solve) beside the measurements: apps[k].predicted and
/// predicted_fair_throughput. Returns the solver's wall time, seconds.
double add_prediction(const SimPlatform& platform, metrics::RunResults& results);

}  // namespace treefarm::sim
