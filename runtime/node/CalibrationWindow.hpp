#pragma once
/// @file CalibrationWindow.hpp
/// The sustained time per task of each application, from the back-to-back calibration
/// runs a node keeps on all its cores (docs/calibration.md, "Task durations").
///
/// Why not the runs' own durations: under a CPU quota (cgroup CPU bandwidth, as
/// `treefarm emulate` sets it) a node may spend quota × period of CPU time per period
/// (100 ms by default) at the core's full speed and is then stopped until the period ends.
/// Runs shorter than that budget go unthrottled, and the stop may fall between two runs
/// (while the node's loop hands a finished run back and starts the next), so neither the
/// median nor even the mean of the runs' wall times is the rate the node sustains (issue
/// 21: a 113 Mflop matmul "in 1.6 ms" on 0.3 core). What the node sustains is what it
/// completes over a window of several periods: the window's core-seconds, shared among
/// the applications in proportion to the kernel time each used, per run.
///
/// Pure: times are passed in (seconds, any origin), so the SimGrid adapter and the tests
/// drive it as the ZeroMQ one does.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace treefarm::node {

class CalibrationWindow {
 public:
  /// Applications with `cores_per_task[k]` cores each, measured on `cores` cores from time
  /// `start`; an application is done after `reps` runs once the window spans `min_window` seconds and the application
  /// has `min_kernel_seconds` of kernel time (or `max_runs` runs, or 3 × min_kernel_seconds
  /// have passed: tiny kernels).
  struct Limits {
    std::uint32_t reps = 5;
    double min_window = 0.3;          ///< seconds of wall time: several quota periods
    double min_kernel_seconds = 1.0;  ///< seconds of kernel time per application
    std::size_t max_runs = 1000;
  };
  CalibrationWindow(std::vector<std::uint32_t> cores_per_task, std::uint32_t cores, double start, Limits limits);

  /// A run of application `k` that took `run_seconds` (its wall time) ended at `now`.
  void record(std::size_t k, double run_seconds, double now);
  /// Whether application `k` has been measured enough by `now` (see the constructor).
  bool enough(std::size_t k, double now) const;
  /// Sustained seconds per task of application `k` at `now`: the window's core-seconds
  /// (now − start) × the cores the runs can fill, times k's share of all the core-seconds
  /// the runs used so far, over k's runs and its cores per task. Never below the mean of
  /// k's own runs. 0 before k's first run.
  double sustained_seconds(std::size_t k, double now) const;
  /// Mean wall time of k's runs (0 before its first run).
  double mean_run_seconds(std::size_t k) const;
  /// Median wall time of k's runs (0 before its first run).
  double median_run_seconds(std::size_t k) const;
  std::size_t runs(std::size_t k) const { return samples_.at(k).size(); }
  /// Kernel seconds k's runs took in all.
  double kernel_seconds(std::size_t k) const { return total_.at(k); }

 private:
  std::vector<std::uint32_t> cores_per_task_;
  double capacity_ = 1;  ///< cores the runs can keep busy at once
  double start_;
  Limits limits_;
  std::vector<std::vector<double>> samples_;  ///< per application, seconds
  std::vector<double> total_;                 ///< per application, kernel seconds
  double all_core_seconds_ = 0;               ///< Σ run seconds × cores per task
};

}  // namespace treefarm::node
