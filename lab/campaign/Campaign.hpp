#pragma once
/// @file Campaign.hpp
/// `treefarm experiment paper`: the simulation campaign of papers/beaumont2006 §5, run
/// with the SimGrid adapter. Random trees (§5.1.2) of 5, 10, 20, 50 and 100 nodes with
/// maximum degree 2, 5 and 15, 10 trees of each (150 platforms); K applications with CCRs
/// evenly spaced in [0.001, CCR_max], CCR_max drawn per platform (§5.1.3); every policy on
/// every platform with buffers of 10 tasks and 200 tasks per application (§5.1.4), and
/// lp/cgbc/data-centric again with buffers of 100 tasks and 2000 tasks per application
/// (§5.2.1), and once more with zero latencies as a control. It reports (§5.2.2) the distribution of ln(experimental fair throughput of lp
/// / that of each policy), its geometric mean and worst case, and (§5.2.1) the deviation
/// of the experimental fair throughput from the theoretical one. docs/simulation.md ("The
/// paper's campaign") documents the choices; docs/results/paper-campaign.md is its report.

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/core/Policy.hpp"
#include "tools/simulate/GenPlatform.hpp"

namespace treefarm::lab::campaign {

struct CampaignOptions {
  /// Directory of the report (paper-campaign.md), the JSON summary (campaign.json), the
  /// histograms (*.png) and their data. Created if missing.
  std::string out_dir = "out/paper-campaign";
  /// Simulations in flight at once (each is a forked process). 0 = the number of cores.
  std::uint32_t jobs = 0;
  /// Replace sizes/degrees/trees/tasks by quick_subset()'s: a smoke run of seconds.
  bool quick = false;

  std::vector<std::uint32_t> sizes = {5, 10, 20, 50, 100};  ///< Nodes per tree (§5.1.2).
  std::vector<std::uint32_t> degrees = {2, 5, 15};          ///< Maximum degrees (§5.1.2).
  std::uint32_t trees = 10;       ///< Trees per (size, degree) (§5.1.2).
  std::uint32_t apps = 3;         ///< K applications (not stated in §5: our choice).
  std::uint64_t tasks = 200;      ///< Tasks per application, small-buffer runs (§5.1.4).
  std::uint32_t buffer = 10;      ///< Buffer, tasks, of the main runs (§5.2.1).
  std::uint32_t big_buffer = 100; ///< Buffer, tasks, of the §5.2.1 runs (0 = skip them).
  std::uint64_t big_tasks = 2000; ///< Tasks per application of the big-buffer runs.
  /// Also run the big-buffer runs with every link latency set to 0 (a control that is not
  /// in the paper: the LP has no latency, the simulated one-port pays it on every send).
  bool latency_control = true;
  double ccr_max_low = 0.002;     ///< bytes/flop, lower end of the CCR_max draw (§5.1.3).
  double ccr_max_high = 4.6;      ///< bytes/flop, upper end of the CCR_max draw.
  bool ccr_log_uniform = true;    ///< CCR_max log-uniform (true) or uniform in the range.
  /// Task sizes of the generated applications (GenOptions::task_sizes): the same work per
  /// task (default) or the paper's 3500 × 3500 matrices (`--task-sizes paper`).
  simulate::GenOptions::TaskSizes task_sizes = simulate::GenOptions::TaskSizes::same_work;
  /// Policies of the main runs; must contain "lp" (the reference of §5.2.2). The paper's
  /// five (§4), not every registered policy (bertin2008's price is studied by
  /// `treefarm experiment price`).
  std::vector<std::string> policies = {"fcfs", "cgbc", "pbc", "lp", "data-centric"};
  /// Policies of the big-buffer runs: those with a theoretical throughput (§5.2.1).
  std::vector<std::string> big_policies = {"lp", "cgbc", "data-centric"};
  std::uint64_t seed = 2006;      ///< Seeds every platform and CCR_max draw.
  double wall_limit = 900;        ///< Wall seconds per simulation (0 = none).
  /// The command line written into the report ("" = rebuilt from these options).
  std::string command;
};

/// The quick subset applied when `quick` is set: trees of 5 and 10 nodes, degrees 2 and
/// 5, one tree each, 50 tasks per application (300 in the big-buffer runs).
CampaignOptions quick_subset(CampaignOptions options);

/// Runs the campaign: generates the platforms, simulates every (platform, policy, buffer)
/// with at most `jobs` simulations at once, and writes OUT/paper-campaign.md,
/// OUT/campaign.json, OUT/ln-ratio.png, OUT/deviation.png (gnuplot; skipped with a note if
/// gnuplot is missing) and the histogram data. Progress lines go to `progress`. Returns 0
/// when every simulation completed every task, 4 when some did not (they are reported and
/// left out of the statistics), 130 when `stop` became true (SIGINT/SIGTERM): no
/// simulation is started after that, the running ones are ended, and the report and
/// campaign.json cover the simulations that had finished (they say so). Throws
/// std::invalid_argument for bad options and std::runtime_error when the output cannot be
/// written.
int paper_campaign(const CampaignOptions& options, std::ostream& progress, const std::atomic<bool>* stop = nullptr);

}  // namespace treefarm::lab::campaign
