#pragma once
/// @file RunRecord.hpp
/// What the root records of a run: every result exactly once (the figures and task list of
/// results.json, the journal that `--resume` continues), when each task was dispatched,
/// which child each result came through (to revoke a forger's), and the run's status for
/// `treefarm status` and the served master.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "master/EtaModel.hpp"
#include "master/OutputFiles.hpp"
#include "master/Master.hpp"
#include "runtime/metrics/Journal.hpp"
#include "runtime/metrics/ProcessMemory.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/metrics/TaskLog.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/node/NodeDriver.hpp"
#include "runtime/node/TaskMap.hpp"

namespace treefarm::master {

class RunRecord {
 public:
  /// `ex` must outlive the object; `text` is the experiment as run (results.json's header).
  /// Opens out_dir/journal.tsv (continued with options.resume) unless `calibrating`.
  RunRecord(const model::Experiment& ex, const std::string& text, const MasterOptions& options, bool calibrating);

  /// Sets the root's hooks that record: done_before, on_start, on_result, check_output,
  /// on_output, on_joined, on_load and the fallbacks of on_measure.
  void install(node::RootSetup& root);

  /// The root hands task `id` out now (results.json's dispatch times).
  void mark_dispatched(core::TaskId id) {
    const auto k = id.app().value;
    if (k < dispatched_.size() && id.index() < dispatched_[k].size())
      dispatched_[k][id.index()] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - steady_start_).count();
  }
  /// The result of task `task_id` arrived through child `via` (held responsible for it).
  void arrived_via(std::uint64_t task_id, const std::string& via) { arriving_via_[task_id] = task_log_->intern(via); }
  /// A forger was convicted (RootSetup::convict): the records to revoke, as tasks to redo.
  std::vector<core::TaskRef> revoke(const std::string& culprit, const std::string& via, bool whole_child);

  /// The journal to disk (on its own thread), about once a second.
  void sync();
  /// {"elapsed" s, "apps": [...], "nodes": [...]} (MasterOptions::on_status).
  nlohmann::json status(double now) const;
  /// Seconds since dispatching started (0 before).
  double elapsed(double now) const { return start_ > 0 ? now - start_ : 0.0; }
  /// Seconds on the results' clock (TaskRecord::completed_at): elapsed() after the
  /// completions of a resumed journal.
  double clock(double now) const { return time_offset_ + elapsed(now); }
  bool started() const { return start_ > 0 || done_ > 0; }
  std::uint64_t done() const { return done_; }
  std::uint64_t total() const { return ex_.total_tasks(); }
  const std::vector<std::uint64_t>& per_app() const { return per_app_; }
  metrics::RunResults& results() { return results_; }
  /// The per-task records so far (the dashboard's task stream reads its last ones).
  const metrics::TaskLog* task_log() const { return task_log_.get(); }
  /// The finished run for a served master's list: {"tree": [{name, parent, cores, done}],
  /// "apps": [{name, tasks, done, throughput tasks/s, predicted tasks/s or null}]}; both
  /// empty if the run wrote no results (it failed or was interrupted).
  nlohmann::json summary() const;

  /// Ends a run that returned `rc`: results.json (with `cancelled`), the table or the JSON
  /// line on stdout. Returns the run's exit code (node::ExitCode).
  int finish(int rc, bool cancelled, const metrics::ProcessMemory& memory_at_start);
  /// The predicted completion of the run (EtaModel), once a node's time per task is known;
  /// also keeps the prediction made at a tenth of the tasks (results.json "eta").
  std::optional<EtaModel::Eta> eta(double now);
  /// Called with the results once computed, before they are written (the a-posteriori
  /// prediction, master/LiveRun).
  void on_computed(std::function<void(metrics::RunResults&)> f) { on_computed_ = std::move(f); }
  /// Throws std::runtime_error if an output was not kept for --output-quota (after finish()).
  void check_output_quota() const;

 private:
  void open_journal(bool calibrating);
  /// A failed result: run its task again (true) while its application's max_retries allow.
  bool retry(const net::msg::Result& r);
  /// The file, line or number of a task of a bag with its own inputs ("" otherwise).
  std::string input_of(core::TaskId id) const;
  EtaModel eta_{0};  // set in the constructor
  double last_result_at_ = 0;  // seconds since the start, of the last result recorded
  std::unordered_map<std::uint64_t, std::uint32_t> attempts_;  // task id -> retries so far (failed tasks only)
  std::uint64_t retried_ = 0;

  const model::Experiment& ex_;
  const MasterOptions& options_;
  OutputFiles outputs_;  ///< OUT/outputs/, under --output-quota
  metrics::RunResults results_;
  std::shared_ptr<metrics::TaskLog> task_log_;
  bool disk_full_told_ = false;  ///< the task log's full disk was logged
  std::unique_ptr<metrics::Journal> journal_;
  std::vector<std::vector<bool>> resumed_;  // per app: done in an earlier run
  double time_offset_ = 0;                  // seconds: resumed completions continue the journal's timeline
  std::vector<std::uint64_t> per_app_;
  std::uint64_t done_ = 0;
  bool finished_ = false;  // results computed (finish() of a run that succeeded)
  double start_ = 0;  ///< seconds from the master's start to the start of dispatch (every node joined)
  std::uint64_t rss_joined_ = 0;  ///< bytes, the master's resident memory when dispatch started
  std::uint64_t shmem_joined_ = 0;  ///< bytes of it in shared memory (its children's input segments)
  double cpu_at_start_ = 0, cpu_at_end_ = 0;  ///< the master's CPU seconds when dispatch started and ended
  /// The master's CPU seconds at the last result (every task done), or -1: the end of
  /// dispatch_cpu_seconds, which leaves out the tree's teardown (each child's Bye, the
  /// shared input segments unmapped) — a cost per child, not per task.
  double cpu_at_last_result_ = -1;
  std::chrono::steady_clock::time_point steady_start_{};
  std::vector<std::vector<double>> dispatched_;
  node::IdMap<std::uint32_t> arriving_via_;  // task -> child (task_log name id), until recorded
  std::unordered_map<std::string, std::uint64_t> done_by_node_;
  /// Each node's state as its heartbeats last brought it up, and how many times they did.
  struct Reported {
    net::msg::NodeLoad load;
    std::uint64_t reports = 0;
  };
  std::unordered_map<std::string, Reported> load_by_node_;
  std::function<void(metrics::RunResults&)> on_computed_;
};

}  // namespace treefarm::master
