#pragma once
/// @file LocalWork.hpp
/// What a node computes on its own cores: the jobs on its LocalRunner (tasks and
/// calibration runs), the cores they hold, the task requests made for cores nobody has
/// claimed yet, the epoch (bumped when the parent is lost: older jobs are ignored when
/// they end) and, per application, the seconds and count of the tasks run here.

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/core/Events.hpp"
#include "runtime/model/Application.hpp"
#include "runtime/node/LocalRunner.hpp"
#include "runtime/node/TaskMap.hpp"

namespace treefarm::node {

class LocalWork {
 public:
  struct Job {
    std::optional<core::TaskRef> task;  ///< none: a calibration run
    std::uint64_t epoch = 0;            ///< the epoch when started
    std::size_t app = 0;
    std::uint32_t cores = 1;
  };

  /// `runner` may be null (a node that only forwards; one with 0 cores counts as none).
  explicit LocalWork(LocalRunner* runner) : runner_(runner && runner->cores() > 0 ? runner : nullptr) {}

  LocalRunner* runner() const { return runner_; }
  std::uint32_t cores() const { return runner_ ? runner_->cores() : 0; }

  /// The run's applications (their cores per task bound how many tasks fit).
  void configure(const std::vector<model::AppSpec>& apps);
  /// Tasks to ask the core for: one per free core-slot nobody has claimed (counted as
  /// pending until started). 0: none.
  std::uint32_t claim();

  void start_task(core::TaskRef task, const model::AppSpec& app, const Payload& input);
  void start_calibration(std::size_t k, const model::AppSpec& app, const Payload& input);
  /// Job `id` ended: its record (nullopt if unknown); a task's cores are free again.
  std::optional<Job> finish(std::uint64_t id);
  /// Started in the current epoch (before the parent was lost, it no longer counts).
  bool current(const Job& job) const { return job.epoch == epoch_; }
  /// A task of application `k` ran here for `seconds` (TreeInfo task times).
  void ran(std::size_t k, double seconds, std::size_t apps);
  /// The mean seconds of the tasks of `k` run here (nullopt: none ran).
  std::optional<double> mean_seconds(std::size_t k) const;

  /// Cores held by running tasks, and tasks running in the current epoch.
  std::uint64_t busy_cores() const { return committed_cores_; }
  std::size_t running_tasks() const;

  /// The parent is lost: no request pending, calibration runs forgotten, a new epoch.
  void lost_parent();

 private:
  LocalRunner* runner_;
  IdMap<Job> jobs_;  ///< by value: one allocation per task fewer
  std::uint64_t next_job_ = 1;
  std::uint32_t min_cores_per_task_ = 1;
  std::uint64_t committed_cores_ = 0;
  std::uint32_t pending_ = 0;
  std::uint64_t epoch_ = 0;
  std::vector<double> seconds_;
  std::vector<std::uint64_t> runs_;
};

}  // namespace treefarm::node
