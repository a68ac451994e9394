#pragma once
/// @file ExecutorRunner.hpp
/// The node driver's LocalRunner on real cores: each job runs the application's kernel
/// (tasks/TaskRunner) on the Executor, in a pinned oneTBB arena of the task's cores. The
/// event loop waits on notify_fd() and calls collect() to hand finished jobs to the
/// driver.

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/exec/Executor.hpp"
#include "runtime/exec/InlineCpu.hpp"
#include "runtime/node/LocalRunner.hpp"

namespace treefarm::exec {

class ExecutorRunner final : public node::LocalRunner {
 public:
  explicit ExecutorRunner(ExecutorConfig config);
  /// Kills the command tasks still running (tasks::stop_all_commands: every process of
  /// theirs), waits for the executor's threads, then lets command tasks start again.
  ~ExecutorRunner() override;

  std::uint32_t cores() const override;
  void start(std::uint64_t job, const model::AppSpec& app, const node::Payload& input) override;
  /// A command task (tasks/CommandTask.hpp) runs its program pinned to the task's cores;
  /// a kernel task as start.
  void start_task(std::uint64_t job, const model::AppSpec& app, const node::Payload& input,
                  std::uint64_t task_index) override;
  node::Payload calibration_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t k) override;
  /// The period of the CPU quota this process runs under (CpuQuota.hpp), read once.
  std::optional<double> cpu_quota_period() const override { return quota_period_; }

  /// Readable while finished jobs of the executor wait in collect().
  int notify_fd() const;
  /// Jobs finished on the fast path wait in collect() (the loop must not sleep).
  bool has_inline_done() const { return !inline_done_.empty(); }
  /// Hands every finished job to `done` (job id, outcome). A task run inline carries its
  /// application's CPU owed so far (InlineCpu.hpp), not a reading of its own.
  void collect(const std::function<void(std::uint64_t, node::JobOutcome)>& done);
  /// Reads of the loop thread's CPU clock for inline tasks so far (a few per burst).
  std::size_t inline_cpu_reads() const { return inline_cpu_.reads(); }

 private:
  struct Run;
  /// A job finished on the fast path; `app` (its application, a key for InlineCpu) is null
  /// for a calibration run, whose CPU is no task's.
  struct InlineDone {
    std::uint64_t job = 0;
    const void* app = nullptr;
    node::JobOutcome outcome;
  };
  void start_job(std::uint64_t job, const model::AppSpec& app, const node::Payload& input, std::uint64_t task_index,
                 bool task);
  /// Destroyed after exec_: lets command tasks start again once its threads have ended.
  struct CommandsGate {
    CommandsGate() = default;
    CommandsGate(const CommandsGate&) = delete;
    CommandsGate& operator=(const CommandsGate&) = delete;
    ~CommandsGate();
  };
  CommandsGate gate_;
  /// The CPUs a command task may run on when the executor shares a set (not pinned); empty:
  /// the task's own cores.
  std::vector<int> shared_cpus_;
  Executor exec_;
  std::optional<double> quota_period_;  ///< seconds; nullopt: no quota
  std::unordered_map<std::uint64_t, std::shared_ptr<Run>> runs_;  ///< by executor id
  std::vector<InlineDone> inline_done_;   ///< fast path, in order
  std::vector<InlineDone> inline_spare_;  ///< collect()'s other vector
  InlineCpu inline_cpu_{thread_cpu_seconds};
};

}  // namespace treefarm::exec
