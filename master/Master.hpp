#pragma once
/// @file Master.hpp
/// The master: the root node of the tree. It holds the applications' bags of tasks and
/// generates each task's input from a per-run secret, runs the root node scheduler over
/// ZeroMQ, spot-checks a secret fraction of results by recomputing them, records each task
/// exactly once, and writes results.json.

#include <cstddef>
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/model/Experiment.hpp"
#include "runtime/zmq/Curve.hpp"

namespace treefarm::zmq_node { class ZmqNode; }
namespace treefarm::dashboard { class Feed; }

namespace treefarm::master {

struct MasterOptions {
  std::string experiment;                      ///< Experiment file (TOML).
  /// Applications from several masters (papers/bertin2008 §2.2): run only the applications
  /// whose `origin` is this node, as the master of the tree re-rooted there
  /// (model::rerooted); "" = the experiment's master, which refuses other origins.
  std::string origin;
  std::string listen = "tcp://127.0.0.1:*";    ///< Where workers connect.
  std::string out_dir;                         ///< results.json goes here ("" = none).
  std::string policy;                          ///< Overrides [run] policy if set.
  std::optional<std::uint32_t> buffer;         ///< Overrides [run] buffer if set.
  std::string ready_file;                      ///< The bound endpoint is written here.
  std::optional<std::size_t> wait_for_nodes;   ///< Default: every node of the experiment.
  double wait_timeout = 60;                    ///< seconds
  bool progress = true;                        ///< Progress on stderr (a live bar on a terminal).
  /// Progress as JSON lines on stdout instead (one object per second), the results as a
  /// last JSON line instead of the table (runtime/metrics/Progress.hpp).
  bool json_progress = false;
  bool table = true;                           ///< Print the result table on stdout.
  std::optional<std::vector<int>> cores;       ///< Cores the master computes on (default: the master node's `cores`).
  std::string calibration;                     ///< Calibration file: add LP predictions.
  /// Without `calibration`, under policy lp: a calibration file holding only the machines
  /// the nodes share (their CPUs, each node's CPU set and share, the CPU cost of a byte
  /// moved; `treefarm run` writes it): the host rows of the first plan, which the run
  /// makes from its own estimates (docs/live-model.md). "" = every node alone.
  std::string host_calibration;
  /// Calibration run: write the measurements here instead of running tasks.
  std::string calibrate_out;
  std::uint32_t calibrate_reps = 5;            ///< Kernel runs per application and node.
  double calibrate_timeout = 300;              ///< seconds for every measurement to arrive
  net::CurveConfig curve;                      ///< CURVE encryption and authentication.
  bool insecure = false;                       ///< Allow unencrypted non-loopback links.
  double heartbeat_interval = 1.0;             ///< seconds
  double heartbeat_timeout = 6.0;              ///< seconds
  std::string migration;                       ///< "off" | "pull" | "push"; "" = the experiment's run.migration
  std::string balance;                         ///< "off" | "tll" | "mll"; "" = the experiment's run.balance
  /// bytes: node::NodeOptions::one_port_window, also used by the LP prediction (0 = off).
  std::uint64_t one_port_window = model::default_one_port_window;
  double task_deadline_factor = 4;             ///< node::NodeOptions::task_deadline_factor
  double task_deadline_floor = 60;             ///< seconds (node::NodeOptions::task_deadline_floor)
  double ack_timeout = 60;                     ///< seconds (node::NodeOptions::ack_timeout)
  std::uint32_t max_task_losses = 3;           ///< A task lost with this many dead workers fails.
  /// Continue the run journaled in out_dir/journal.tsv: tasks it records are not redone.
  bool resume = false;
  /// Fraction in [0, 1] of the children's results the master recomputes (spot checks,
  /// chosen secretly per task; docs/security.md). A wrong one disconnects the child it came
  /// through and redoes everything recorded from it.
  double spot_check = 0.01;
  /// Task inputs (docs/security.md "Secret inputs"): false = a fresh input per task from
  /// the run secret (the default: a worker can neither predict nor replay one); true = a
  /// pool of two secret inputs per application that every task reuses (`--inputs pooled`,
  /// for trees of trusted workers: a worker can replay a result it computed before, which
  /// spot checks can no longer tell from a computed one). Pooled inputs spare the master
  /// the generation and the machine the memory traffic of one fresh input per task.
  bool pooled_inputs = false;
  /// Served tree (master/Server.hpp, docs/serve.md): run on this live root instead of
  /// opening a tree of its own (listen, curve and cores are the live node's).
  zmq_node::ZmqNode* live = nullptr;
  /// With `live`: the experiment has no [[node]] tables of its own and runs on the tree as
  /// it is. A calibration run then measures the nodes that join (up to wait_for_nodes, at
  /// most wait_timeout seconds of waiting) and records each one's parent, so that the
  /// calibration gives the LP the live tree's shape (docs/serve.md).
  bool live_tree = false;
  /// Called about once a second while tasks run, on the loop thread, with the run's
  /// progress: {"elapsed" s, "apps": [{name, tasks, done, throughput tasks/s, predicted
  /// tasks/s or null}], "nodes": [{name, parent, cores, done}]} (`treefarm status`).
  std::function<void(const nlohmann::json&)> on_status;
  /// Live dashboard (runtime/dashboard, docs/dashboard.md): once a tick the root publishes
  /// there, on the loop thread, what on_status gets, the LP's plan and its last tasks;
  /// its HTTP server reads them on threads of its own. Null: none.
  dashboard::Feed* dashboard = nullptr;
  /// Served tree (`treefarm cancel`, docs/serve.md): once set, the run ends at the next
  /// tick as a finished one would — the tree is reset and stays alive — and results.json
  /// says `"cancelled": true` with what completed; run_master then returns 130.
  const std::atomic<bool>* cancel = nullptr;
  /// Set when the run ends (a served master's list of finished experiments): RunRecord::summary.
  nlohmann::json* summary = nullptr;
  /// A submission to a served master (docs/security.md): its command input_file must lie in
  /// the experiment's folder (model::ParseOptions::confine_inputs) and no command runs on
  /// the master, not even for a spot check (`spot_check = true` is not honoured).
  bool served = false;
  /// bytes: the most the output files of one run may take (OUT/outputs/); an output past it
  /// is not kept, nor any later one, and run_master throws when the run has ended.
  std::uint64_t output_quota = std::uint64_t{4} << 30;
};

/// Runs a whole experiment as its master. Returns the exit code: 0 when every task was
/// completed exactly once with the right result, 4 if some were lost, wrong or failed,
/// 1 on error, 130 when interrupted. Every verified result is journaled to
/// out_dir/journal.tsv (Journal.hpp); results.json is written atomically.
int run_master(const MasterOptions& options);
/// The same for an experiment already read: `ex` as parsed from `text` (results.json keeps
/// the text); options.experiment is not read.
int run_master(const model::Experiment& ex, const std::string& text, const MasterOptions& options);

/// Stops a run_master in progress (async-signal-safe).
void stop_master();

}  // namespace treefarm::master
