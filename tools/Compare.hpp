#pragma once
/// @file Compare.hpp
/// `treefarm compare` (and `treefarm emulate ... compare`): the experiment once per
/// policy, each set beside the LP optimum of the calibrated platform.

#include <atomic>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

struct CompareOptions {
  std::vector<std::string> policies;   ///< Empty = all, in the paper's order.
  std::string calibration;             ///< Calibration file; "" = calibrate first (unless no_calibrate).
  bool no_calibrate = false;           ///< No calibration: no prediction, and policy lp is skipped.
  std::string out_dir;                 ///< DIR/compare.json, DIR/compare.png, DIR/POLICY/...
  /// Runs per policy (>= 1). Above 1, run r of a policy writes DIR/POLICY/run-R/ and the
  /// table, compare.json and compare.png give the mean and the spread of the runs.
  unsigned repeat = 1;
  LaunchOptions launch;                ///< Base options of every run (hooks for emulation).
  /// The runs go to a served tree (compare --to, docs/serve.md): the runner calibrates it
  /// there when asked (`--calibrate-out FILE` in master_args), and no host row is added
  /// from this machine (which nodes of a served tree share a machine is not known).
  bool served = false;
  /// Called after the table with the output directory (emulation adds the link usage).
  std::function<void(const std::string& dir, std::ostream& out)> after;
};

/// Runs one tree with the given options (launch_tree, or the emulated equivalent).
using TreeRunner = std::function<int(const LaunchOptions&)>;

/// Runs the comparison; prints the table to `out`; returns 0 if every run was OK, 4 if
/// some run lost or got a wrong task, or the first error code.
int compare_policies(const model::Experiment& ex, const CompareOptions& options, const TreeRunner& runner,
                     std::ostream& out);

/// The comparison table and compare.json from per-policy results.json documents.
nlohmann::json compare_json(const std::vector<std::pair<std::string, nlohmann::json>>& results);
/// The same from several runs per policy (`--repeat`): each policy's figures are the mean
/// over its runs (fair_throughput, fair_ratio, each application's throughput and ratio, in
/// tasks/s), with `runs`, the sample standard deviation (`*_stddev`, 0 for one run), the
/// `*_min`/`*_max` of the fair throughput and ratio, and `repeats`: per run its
/// fair_throughput, fair_ratio, duration (seconds) and ok. `ok` is true only if every
/// run was; `completed` is the fewest completed by a run, `wrong` the sum.
nlohmann::json compare_json(const std::vector<std::pair<std::string, std::vector<nlohmann::json>>>& runs);
void print_compare_table(std::ostream& out, const nlohmann::json& compare);

/// Plots with gnuplot (PNG): the fair ratio per policy (DIR/compare.png; with error bars of
/// ± one standard deviation when a policy ran more than once) and, per policy, cumulative
/// completed tasks per application against the LP's slope (DIR/POLICY/cumulative.png, of
/// the run given in `results`). Returns false (with a note on `out`) if gnuplot is absent.
bool plot_compare(const std::string& dir, const nlohmann::json& compare,
                  const std::vector<std::pair<std::string, nlohmann::json>>& results, std::ostream& out);

/// Bytes/s each link carried during a run: the input bytes of every task computed in the
/// child's subtree, over the run's duration. Per non-root node, in experiment order.
std::vector<double> link_bytes_per_second(const model::Experiment& ex, const nlohmann::json& results);

/// Per policy, each link's achieved bytes/s beside `rate(node)` (its shaped rate, bytes/s;
/// 0 = unshaped).
void print_link_usage(std::ostream& out, const model::Experiment& ex, const std::string& compare_dir,
                      const std::function<double(std::size_t)>& rate);

}  // namespace treefarm::tools
