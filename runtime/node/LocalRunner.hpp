#pragma once
/// @file LocalRunner.hpp
/// What the node driver needs to compute on its own cores: start a job (a task, or a
/// calibration run of an application's kernel) and hear when it ended. The ZeroMQ side
/// runs the real kernels on the executor (runtime/exec), the simulation executes the
/// task's flops on its host, tests use a fake.

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/model/Application.hpp"
#include "runtime/node/Payload.hpp"

namespace treefarm::node {

/// How a job ended.
struct JobOutcome {
  double run_seconds = 0;      ///< seconds the kernel ran
  double queued_seconds = 0;   ///< seconds it waited for cores
  double checksum = 0;         ///< the kernel's result checksum (tasks/Checksum.hpp)
  bool failed = false;
  std::string error;           ///< why, when failed
  /// A command's output file, when its application sends outputs back (AppSpec::send_output).
  Payload output = {};
  /// bytes of a command's output (0 for the kernels), whether it is sent back or not: a
  /// calibration run reports it for an application that sends outputs back.
  std::uint64_t output_bytes = 0;
  /// CPU seconds the kernel itself used (the thread that ran it, without its waits for a
  /// CPU); < 0: not measured (a command, whose program is another process, a task of
  /// several cores, whose other threads are the arena's, or a simulation). A task run inline
  /// on the loop thread carries its application's CPU measured over its last burst of such
  /// tasks (runtime/exec/InlineCpu.hpp): per application, the sum is its kernels' CPU.
  double cpu_seconds = -1;
};

class LocalRunner {
 public:
  virtual ~LocalRunner() = default;
  /// Cores this node computes on (0: it only forwards).
  virtual std::uint32_t cores() const = 0;
  /// Starts job `job` of application `app` on `input`. The runner keeps `input` alive
  /// until the job ended and reports the end through NodeDriver::on_job_done.
  virtual void start(std::uint64_t job, const model::AppSpec& app, const Payload& input) = 0;
  /// As start, for task `task_index` of its bag (a command's "{index}",
  /// docs/command-tasks.md). By default the index is not needed and start is called.
  virtual void start_task(std::uint64_t job, const model::AppSpec& app, const Payload& input,
                          std::uint64_t task_index) {
    (void)task_index;
    start(job, app, input);
  }
  /// The input a calibration run of application number `k` computes on (inputs are
  /// generated from the run's seed, as the master's are).
  virtual Payload calibration_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t k) = 0;
  /// The period, seconds, of the CPU quota this node runs under (cgroup CPU bandwidth);
  /// nullopt when there is none. Calibration then measures the sustained time per task
  /// over several periods (runtime/node/CalibrationWindow.hpp).
  virtual std::optional<double> cpu_quota_period() const { return std::nullopt; }
  /// The driver needs this node's speed (an application has a min_speed and
  /// NodeOptions::speed is 0): true if the adapter measures it — off the driver's call, as
  /// a measurement blocks — and reports it through NodeDriver::on_speed_measured (flop/s
  /// per core); false: the speed stays unknown. The ZeroMQ adapter times a 512x512 matmul
  /// (tasks::speed_per_core).
  virtual bool measure_speed() { return false; }
};

}  // namespace treefarm::node
