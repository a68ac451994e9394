#pragma once
/// @file Results.hpp
/// What a run measured: per task completions, per application throughput (the
/// steady-state estimate of papers/beaumont2006 §5.1.1), per node counts, and the
/// results.json format (docs/results-format.md).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace treefarm::model { struct Experiment; }

namespace treefarm::metrics {

class TaskLog;

/// One completed task, recorded once at the master.
struct TaskRecord {
  std::uint32_t app = 0;
  std::uint64_t id = 0;           ///< Index of the task within its application.
  std::string node;               ///< Node that computed it.
  double completed_at = 0;        ///< seconds since the start of the run (master's clock): result received
  double compute_seconds = 0;     ///< seconds the kernel ran on that node
  /// seconds since the start (master's clock): the master last handed the task out (sent
  /// it down or started it itself); negative if not recorded (older files).
  double dispatched_at = -1;
  double queued_seconds = 0;      ///< seconds it waited in the node's executor queue
  /// seconds since the start (master's clock) the kernel started: completed_at −
  /// compute_seconds, i.e. without the result's way back up (a few bytes per hop).
  double started_at() const { return completed_at - compute_seconds; }
};

/// A completed task as RunResults::for_each_task shows it, from either store.
struct TaskView {
  std::uint32_t app = 0;
  std::uint64_t id = 0;           ///< Index of the task within its application.
  std::string_view node;          ///< Node that computed it.
  double completed_at = 0;        ///< seconds since the start
  double compute_seconds = 0;     ///< seconds
  double dispatched_at = -1;      ///< seconds since the start; negative if not recorded
  double queued_seconds = 0;      ///< seconds
};

struct AppResult {
  std::string name;
  std::string kernel;
  double weight = 1;
  std::uint64_t tasks = 0;
  std::uint64_t completed = 0;
  std::uint64_t wrong = 0;              ///< Results whose checksum did not match.
  std::uint64_t failed = 0;             ///< Tasks whose kernel raised an error.
  double throughput = 0;                ///< ρ_k, tasks/s (§5.1.1)
  std::optional<double> predicted;      ///< α(k) from the LP, tasks/s
};

struct NodeResult {
  std::string name;
  std::string parent;                   ///< "" for the master
  std::uint32_t cores = 0;
  std::uint64_t tasks_computed = 0;
};

/// results.json's format version (docs/results-format.md); 2 added the header fields
/// below and per-task dispatch and start times.
inline constexpr int results_format_version = 2;

/// A task whose run failed (a kernel's error, a command's exit status and stderr).
struct TaskFailure {
  std::uint32_t app = 0;
  std::uint64_t id = 0;
  std::string node;       ///< Node that ran it.
  std::string error;      ///< Why, as the node reported it (a command: status, then stderr's tail).
  /// The task's own input in a bag of files, lines or numbers: the file, the line or the
  /// number (empty otherwise).
  std::string input = {};
  std::uint32_t attempts = 1;  ///< runs of the task, retries included (max_retries)
};

struct RunResults {
  // Header: enough to reproduce the run. Empty/null when not known.
  std::string started_utc;              ///< ISO 8601 UTC time the dispatching started
  std::string treefarm_version;         ///< "0.1.0"
  nlohmann::json host;                  ///< The master's host facts (treefarm hwdetect --json subset)
  nlohmann::json settings;              ///< Every setting of the run (policy, buffer, seed, options)
  std::string experiment_text;          ///< The experiment file as run (its whole text)
  std::string experiment;
  std::string policy;
  double epsilon = 0.1;
  double duration = 0;                  ///< seconds from start to the last completion
  double steady_end = 0;                ///< T of §5.1.1: first time an application completed, seconds
  std::vector<AppResult> apps;
  std::vector<NodeResult> nodes;
  std::vector<TaskRecord> tasks;
  /// The master's compact per-task records on disk (TaskLog.hpp); when set, they
  /// are tasks too, after `tasks`.
  std::shared_ptr<const TaskLog> task_log;
  std::uint64_t duplicates = 0;         ///< Late duplicate results dropped.
  std::uint64_t lost = 0;               ///< Tasks never completed.
  /// The run was cancelled (`treefarm cancel` on a served tree): the tasks not completed
  /// were never run, not lost (results.json "cancelled").
  bool cancelled = false;
  double fair_throughput = 0;           ///< min_k ρ_k / w_k
  std::optional<double> predicted_fair_throughput;
  /// Where predicted_fair_throughput comes from: "calibration", or "estimates at T s" (a
  /// run without a calibration under policy lp: the LP over the run's own estimates once
  /// they were tight, T seconds after the start; docs/live-model.md); "" = no prediction.
  std::string prediction_source;
  /// The a-priori prediction's interval from the calibration's spread
  /// (lp::prediction_interval: every measured figure at its pessimistic, then at its
  /// optimistic end), tasks/s per unit of weight; results.json "fair_throughput_interval"
  /// {low, high}. None when the run was not calibrated or the calibration has no spread.
  struct Interval {
    double low = 0;
    double high = 0;
  };
  std::optional<Interval> predicted_fair_interval;
  /// The interval from the run's own estimates (lp::run_interval: the LP over the figures
  /// the run measured of itself, each at the ends of its 95 % confidence interval), made
  /// once, `at` seconds after the start, when they were tight; tasks/s per unit of
  /// weight; results.json "fair_throughput_interval_estimates" {at, low, median, high}.
  struct EstimateInterval {
    double at = 0;      ///< seconds since the start
    double low = 0;
    double median = 0;  ///< the LP with every figure at its mean
    double high = 0;
  };
  std::optional<EstimateInterval> estimate_interval;
  /// The LP's plan the prediction comes from (lp::to_json: per node its tasks/s per
  /// application, utilisations, saturated resources); null when the run was not calibrated.
  nlohmann::json plan;
  /// The LP solved with the rates this run observed over its steady window (task times
  /// from the tasks' own compute seconds, links from the nodes' online estimates;
  /// docs/live-model.md), tasks/s per unit of weight; none when it could not be made.
  std::optional<double> predicted_fair_a_posteriori;
  /// What the a-posteriori model of a shared host took from the run (docs/live-model.md):
  /// {window [s, s], available_cores, tree_cpu_seconds, node_cpu_seconds {name: s},
  /// cost_factor, kernel_factor {name: factor}}; null when it was not made.
  nlohmann::json a_posteriori;
  /// Each re-plan of the run (lp::to_json(Replan)): at, cause, node, figure, old_value,
  /// new_value, old_optimum, new_optimum. An array, empty when none.
  nlohmann::json replans = nlohmann::json::array();
  /// By node name: choices its policy made outside its own rule (the lp policy's FCFS
  /// fallbacks when no planned choice was feasible), as the nodes reported them at the
  /// end of the run; empty when the policy reports none.
  std::map<std::string, std::uint64_t> policy_fallbacks;
  /// Every failed task with its reason, in arrival order (results.json "failures").
  std::vector<TaskFailure> failures;

  /// Fills apps[].completed/throughput, steady_end, duration, lost, fair_throughput and
  /// nodes[].tasks_computed from the tasks (`tasks` and `task_log`), in two streaming
  /// passes: no per-task memory.
  void compute();
  /// Calls `f` for every completed task: `tasks`, then `task_log`'s live records.
  void for_each_task(const std::function<void(const TaskView&)>& f) const;
  /// Completed tasks recorded (`tasks` and `task_log`).
  std::uint64_t task_count() const;
  /// True when every task completed exactly once, with no wrong or failed result.
  bool ok() const;
};

/// ρ_k = (N_k((1−ε)T) − N_k(εT)) / ((1−2ε)T), T = the first time some application
/// completed all its tasks (papers/beaumont2006 §5.1.1). `completions[k]` are the
/// completion times (seconds) of application k; `totals[k]` its task count. Returns
/// tasks/s per application and T.
std::pair<std::vector<double>, double> steady_throughput(
    const std::vector<std::vector<double>>& completions, const std::vector<std::uint64_t>& totals,
    double epsilon);

/// Results of a run of `experiment` before anything is recorded: its applications (name,
/// kernel, weight, tasks), policy, ε and path. Nodes are added as they join.
RunResults empty_results(const model::Experiment& experiment);

/// results.json as a DOM; without the "tasks" list when `with_tasks` is false.
nlohmann::json to_json(const RunResults& r, bool with_tasks = true);

/// Writes results.json to `sink` in pieces, the task list streamed one line per task (no
/// DOM of the tasks: memory per task). `trailer`, if given, is called after the tasks are written
/// and its object's keys are added last (e.g. the master's peak memory, measured then).
/// The text parses to the same JSON as to_json(r) plus the trailer's keys.
void write_results_json(const std::function<void(std::string_view)>& sink, const RunResults& r,
                        const std::function<nlohmann::json()>& trailer = {});
RunResults results_from_json(const nlohmann::json& j);

/// The table printed at the end of a run.
void print_table(std::ostream& out, const RunResults& r);

}  // namespace treefarm::metrics
