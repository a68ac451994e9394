#pragma once
/// @file CalibrationWindow.hpp
/// Which calibration run a node starts next and what time per task it reports for each
/// application, from the back-to-back runs it keeps on all its cores
/// (docs/calibration.md, "Task durations").
///
/// Two ways of measuring:
/// - **Interleaved** (no CPU quota): the applications take turns (the one with the least
///   kernel time so far runs next), as in a run, and each reports the mean wall time of
///   its runs.
/// - **Sustained** (the node runs under a CPU quota, cgroup CPU bandwidth as `treefarm
///   emulate` sets it): a quota lets a node spend quota × period of CPU time per period
///   (100 ms by default) at the core's full speed and then stops it until the period ends.
///   Runs shorter than that budget go unthrottled and the stop may fall between two runs
///   (while the node hands a finished run back and starts the next), so neither the median
///   nor the mean of the runs is what the node sustains (a 113 Mflop matmul "in
///   1.6 ms" on 0.3 core). The applications are then measured one after another, each
///   alone on the node's cores for a window of several periods, and each reports
///   window × task slots / runs: the time per task the node sustains, stops included.
///
/// Pure: times are passed in (seconds, any origin), so the SimGrid adapter and the tests
/// drive it as the ZeroMQ one does.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace treefarm::node {

class CalibrationWindow {
 public:
  struct Limits {
    std::uint32_t reps = 5;           ///< runs per application, at least
    double min_window = 0.3;          ///< seconds of wall time per measurement, at least
    double min_kernel_seconds = 1.0;  ///< seconds of kernel time per application...
    std::size_t max_runs = 1000;      ///< ...or this many runs, or a window of 3 × min_kernel_seconds
    bool sustained = false;           ///< one application at a time, window-based (under a quota)
  };

  /// `cores_per_task[k]` cores for each application, `measure[k]` whether it is measured
  /// at all, on a node of `cores` cores, from time `start` (seconds).
  CalibrationWindow(std::vector<std::uint32_t> cores_per_task, std::vector<bool> measure, std::uint32_t cores,
                    double start, Limits limits);

  /// The application whose run to start next; nullopt when every one is done.
  std::optional<std::size_t> next() const;
  /// A run of application `k` that took `run_seconds` (its wall time) ended at `now`.
  /// Returns the seconds per task to report when this run completes k's measurement.
  std::optional<double> record(std::size_t k, double run_seconds, double now);
  /// Marks k done without a figure (its run failed).
  void abandon(std::size_t k);

  bool done(std::size_t k) const { return done_.at(k); }
  std::size_t runs(std::size_t k) const { return samples_.at(k).size(); }
  /// Kernel seconds of k's runs in all.
  double kernel_seconds(std::size_t k) const { return total_.at(k); }
  /// Mean and median wall time of k's runs (0 before its first run).
  double mean_run_seconds(std::size_t k) const;
  double median_run_seconds(std::size_t k) const;
  /// Wall seconds k's measurement covered (its phase when sustained, else since start).
  double window_seconds(std::size_t k, double now) const;

 private:
  bool enough(std::size_t k, double now) const;

  std::vector<std::uint32_t> cores_per_task_;
  std::uint32_t cores_;
  Limits limits_;
  std::vector<bool> done_;
  std::vector<std::vector<double>> samples_;  ///< per application, seconds
  std::vector<double> total_;                 ///< per application, kernel seconds
  std::vector<double> started_;               ///< per application, when its measurement began (−1: at its first run)
};

}  // namespace treefarm::node
