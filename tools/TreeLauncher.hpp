#pragma once
/// @file TreeLauncher.hpp
/// Starts a whole tree of an experiment as local processes on this machine — the master,
/// then every worker once its parent listens — waits for the run, and ends every
/// process it started on every exit path.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model/Experiment.hpp"
#include "tools/CpuPlacement.hpp"

namespace treefarm::tools {

struct LaunchOptions {
  std::string out_dir;                 ///< results.json and logs/ go here ("" = a temp dir).
  /// Polled every turn of the launcher's loop once every node has started; when it returns
  /// true every process is ended (SIGTERM) and launch_tree returns 0 without results (the
  /// host calibration's run together, stopped once its estimate is tight).
  std::function<bool()> stop_when;
  std::string policy;                  ///< Overrides [run] policy.
  std::string migration;               ///< Overrides [run] migration ("off", "pull", "push"; docs/migration.md).
  std::string balance;                 ///< Overrides [run] balance ("off", "tll", "mll"; docs/migration.md).
  std::uint32_t buffer = 0;            ///< Overrides [run] buffer (0 = keep).
  std::string calibration;             ///< Passed to the master for predictions.
  double timeout = 0;                  ///< seconds for the whole run (0 = none).
  bool quiet = false;                  ///< No progress lines.
  bool json_progress = false;          ///< Progress as JSON lines on stdout (master --json-progress).
  std::string log_level = "info";
  std::vector<std::string> master_args;  ///< Extra arguments for treefarm-master.
  std::vector<std::string> worker_args;  ///< Extra arguments for every treefarm-worker.
  /// Where treefarm-master and treefarm-worker are ("" = next to this executable).
  std::string bin_dir;
  /// CURVE on every link: a key pair per node is generated in the run's temp directory,
  /// every node admits the tree's keys only.
  bool encrypt = false;

  /// Chaos (treefarm bench chaos): once the tree is up, every `chaos_interval` seconds on
  /// average (exponential), SIGKILL a random worker and restart it `chaos_restart_delay`
  /// seconds later under the same name and endpoint. 0 = no chaos.
  double chaos_interval = 0;
  double chaos_restart_delay = 1.0;
  std::uint64_t chaos_seed = 1;
  /// Chaos: SIGKILL the master this many seconds after the launch (0 = never); the run then
  /// ends as any run whose master died (every worker ended, its code returned: 137).
  double master_kill_at = 0;
  /// Filled in when chaos is on: workers killed and restarted.
  struct ChaosStats { std::uint64_t kills = 0, restarts = 0; };
  ChaosStats* chaos_stats = nullptr;

  // Hooks for running the tree elsewhere than plain loopback (treefarm emulate).
  /// Command prefix for node i (e.g. {"ip", "netns", "exec", "tf-w1"}); empty = none.
  std::function<std::vector<std::string>(std::size_t node)> wrap;
  /// Endpoint node i listens on (default: its `listen`, else as local_ipc says).
  std::function<std::string(std::size_t node)> listen;
  /// Without a `listen` hook or a node's `listen`, a node listens on a Unix domain socket
  /// (ipc://) in the run's own temp folder: its children are processes of this machine,
  /// and ipc carries tasks' bytes faster than TCP loopback (docs/benchmarks.md, tiny real
  /// tasks). false: tcp://127.0.0.1:*.
  bool local_ipc = true;
  /// Endpoint node i connects to, given the endpoint its parent bound (default: that one).
  std::function<std::string(std::size_t node, const std::string& parent_bound)> parent_endpoint;
  /// Where node i computes (default: assign_cpus over this machine's usable cores).
  std::function<NodeCpus(std::size_t node)> cpus;
  /// CPU seconds node i's processes have used so far, where the platform counts them
  /// (treefarm emulate: the node's accounting cgroup); unset or nullopt = not counted.
  /// Lets the calibration measure a node's whole CPU per task where it runs.
  std::function<std::optional<double>(std::size_t node)> node_cpu_seconds;
};

/// The `--migration` arguments the launcher gives worker `worker` (docs/migration.md):
/// options.migration, else the experiment's [run] migration; with pull only to workers
/// that have children (leaves have no one to pull from), with push to every worker; and
/// `--balance` beside it (options.balance, else [run] balance) when that is not off.
/// Then the node's declared resources (`memory`, `disk`, `speed` of its [[node]]) as
/// `--memory`, `--disk`, `--speed`, which override what the worker detects.
std::vector<std::string> worker_migration_args(const model::Experiment& ex, const LaunchOptions& options,
                                               const std::string& worker);

/// Runs the experiment; returns the master's exit code (or 1 if a worker failed, 124 on
/// timeout, 130 if interrupted through `interrupted`).
int launch_tree(const model::Experiment& ex, const LaunchOptions& options, const std::atomic<bool>& interrupted);

/// Refuses, before anything starts, settings a tree on this one machine cannot hold:
/// an application's memory_per_task (bytes) above this machine's
/// physical memory, or buffers (B tasks per node, `buffer_override` or [run] buffer, times
/// the largest input in bytes, times the nodes) above it.
/// @throws std::invalid_argument naming the file, line and setting.
void check_fits_this_machine(const model::Experiment& ex, std::uint32_t buffer_override);

/// The counts of one tree's run that the benchmarks compare, as its master wrote them.
struct TreeRunCounts {
  int rc = 0;           ///< the master's exit code
  double duration = 0;  ///< seconds from the start of dispatch to the last result
  std::uint64_t tasks = 0, completed = 0, lost = 0, duplicates = 0, wrong = 0;  ///< wrong: wrong + failed
  double rate() const { return duration > 0 ? static_cast<double>(completed) / duration : 0; }  ///< tasks/s
};

/// Reads `counts` from `results` (a results.json) and returns the whole document; null,
/// leaving `counts` as it was, when the file does not exist (the run wrote none).
nlohmann::json read_tree_counts(const std::filesystem::path& results, TreeRunCounts& counts);

}  // namespace treefarm::tools
