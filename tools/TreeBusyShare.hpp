#pragma once
/// @file TreeBusyShare.hpp
/// The share of the CPU it could have had that a saturated tree turns into its own CPU
/// time (docs/calibration.md, "Hosts"; docs/live-model.md, "The a-posteriori
/// prediction"): the host calibration's run of the applications together samples the
/// CPU time of its processes (this process's children) and the machine's idle time, and
/// records tree / (tree + idle) over the run's steady span as the host's `busy_share`.
/// What a saturated tree leaves idle — the gaps while its processes wait for one another
/// — is in the whole-task costs C(k) (the host's CPUs over the run's throughput), and the
/// a-posteriori model, which fits its costs to the tree's CPU only, takes it from here.

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tools/SteadyRate.hpp"

namespace treefarm::tools {

/// One sample: `at` seconds since the sampler started, the CPU seconds (user + system,
/// with their waited-for children) of this process's children so far, the machine's idle
/// CPU seconds so far (/proc/stat: idle + iowait of all CPUs).
struct TreeCpuSample {
  double at = 0;
  double tree_cpu_seconds = 0;
  double idle_seconds = 0;
};

/// tree / (tree + idle) over [lo, hi] seconds, each running total interpolated between
/// the samples around each end; none when the samples do not cover [lo, hi], lo >= hi,
/// or the tree's CPU time grew by nothing (a span too short for the counters: a calibration
/// of sub-millisecond tasks ran 0.7 s and read 0 in every window).
std::optional<double> busy_share(const std::vector<TreeCpuSample>& samples, double lo, double hi);

/// The median of busy_share over the `windows` equal windows of [lo, hi] (the windows
/// without a figure left out); none when no window has one.
std::optional<double> median_busy_share(const std::vector<TreeCpuSample>& samples, double lo, double hi,
                                        std::size_t windows);

/// What the host calibration records (HostCalibration::busy_share): the median share of
/// the steady span `steady` (journal seconds, SteadyRate) of a run whose last journaled
/// completion is at `last_completion`, the samples taken from before the tree started
/// to after it ended. The journal's clock starts once the tree's nodes joined, after the
/// sampler: the span is moved by the samples' end less the last completion (at least the
/// true offset, the tree's ending after its last task adding to it, so the span moves
/// away from the start-up, not into it). None when the samples do not cover the span.
std::optional<double> run_busy_share(const std::vector<TreeCpuSample>& samples, const SteadyRate& steady,
                                     double last_completion);

/// CPU seconds of this process's live children (every /proc/PID/stat whose parent is
/// this process: utime + stime + cutime + cstime).
double children_cpu_now();

/// Samples children_cpu_now() and the machine's idle time every `period` seconds on a
/// thread of its own from construction to stop().
class TreeCpuSampler {
 public:
  explicit TreeCpuSampler(double period = 0.2);
  ~TreeCpuSampler();
  TreeCpuSampler(const TreeCpuSampler&) = delete;
  TreeCpuSampler& operator=(const TreeCpuSampler&) = delete;
  /// Takes a last sample, ends the thread and returns every sample in order.
  std::vector<TreeCpuSample> stop();

 private:
  void sample();
  double period_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<TreeCpuSample> samples_;
  std::chrono::steady_clock::time_point t0_;
  std::thread thread_;
};

}  // namespace treefarm::tools
