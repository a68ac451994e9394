#pragma once
/// @file Sweep.hpp
/// `treefarm sweep`: the real tree run once per kernel size of one application, each
/// size calibrated first, measured beside the LP's prediction against the CCR
/// b(k)/c(k): where the prediction holds, and where the platform turns from
/// link-bound to CPU-bound.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model/Experiment.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

struct SweepOptions {
  std::string app;                      ///< Application whose matrix order varies.
  std::vector<std::uint32_t> sizes;     ///< Matrix orders n, each >= 1.
  std::optional<std::uint64_t> tasks;   ///< Tasks of every application (default: the file's).
  std::string out_dir;                  ///< DIR/sweep.json, DIR/sweep.png, DIR/n-N/ (default out/sweep-NAME).
  LaunchOptions launch;                 ///< Base options of every run.
  /// The host record added after each calibration: true when the tree's nodes share this
  /// machine's CPUs (calibrate_local_host); false on an emulated LAN, where every node is
  /// a host of its own with its CPU quota (calibrate_emulated_hosts, as `compare` does
  /// for a wrapped launch).
  bool host_record = true;
  /// The runner records the hosts itself when it calibrates (sweep --emulate: `treefarm
  /// emulate ... calibrate` measures each node's whole task where it runs, which needs the
  /// platform it builds); then neither record above is added.
  bool runner_records_hosts = false;
  /// seconds: after each calibration, when the LP predicts the run would end sooner, every
  /// application's tasks are scaled up so that it lasts about this long (a short run's
  /// steady window under-measures or over-measures: docs/commands.md `sweep`). 0 = the
  /// tasks as given.
  double min_seconds = 0;
};

/// The experiment file text `toml_text` (read from `path`) with each application's
/// `tasks` set from `tasks` (by name; others unchanged). Throws std::invalid_argument if
/// the text does not parse.
std::string experiment_with_tasks(const std::string& toml_text, const std::string& path,
                                  const std::map<std::string, std::uint64_t>& tasks);

/// Tasks per application (by name) so that a run of `ex` at the fair throughput
/// `fair_per_s` (tasks/s per unit of weight) lasts about `seconds`: each application's
/// tasks scaled by the same factor, never fewer than it has. Empty when it lasts that
/// long already (or fair_per_s <= 0).
std::map<std::string, std::uint64_t> tasks_for_duration(const model::Experiment& ex, double fair_per_s, double seconds);

/// The experiment file text `toml_text` (read from `path`) with application `app`'s `n`
/// set to `n` and, if given, every application's `tasks` set to `tasks`. Throws
/// std::invalid_argument if the text does not parse or has no application `app` with a
/// matrix kernel (matmul, matadd).
std::string experiment_with_size(const std::string& toml_text, const std::string& path, const std::string& app,
                                 std::uint32_t n, std::optional<std::uint64_t> tasks);

/// Runs one tree with the given experiment and options (launch_tree).
using SweepRunner = std::function<int(const model::Experiment&, const LaunchOptions&)>;

/// For each size: writes DIR/n-N/experiment.toml, calibrates it (DIR/n-N/calibration.json,
/// with the host record), runs it with that calibration (DIR/n-N/results.json), then
/// writes DIR/sweep.json, prints the table and plots DIR/sweep.png (gnuplot). Returns 0
/// if every run was OK, else the first non-zero exit code (the sweep goes on).
int sweep(const std::string& experiment_path, const SweepOptions& options, const SweepRunner& runner,
          std::ostream& out);

/// The sweep.json document from per-size points (each {"n", "ccr", "measured",
/// "predicted", "ratio", "exit_code", ...}).
void print_sweep_table(std::ostream& out, const nlohmann::json& sweep);

}  // namespace treefarm::tools
