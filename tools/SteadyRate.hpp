#pragma once
/// @file SteadyRate.hpp
/// The steady rate of a measuring run of several applications in their weights, from its
/// journal's completion times (docs/calibration.md, "Hosts"): the host calibration runs the
/// applications together once and reads how many units of weight per second the tree
/// sustains once its start-up has passed, and how much that rate moves within the run.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace treefarm::tools {

/// One verified task as the journal records it: its application's index and when it
/// completed (seconds since the run started).
struct Completion {
  std::uint32_t app = 0;
  double at = 0;
};

/// What steady_rate() finds.
struct SteadyRate {
  double start = 0;  ///< seconds: the start of the steady span (the warm-up before it is left out)
  double end = 0;    ///< seconds: its end, (1 - epsilon) × the first time an application had all its tasks done
  /// Units of weight per second over the span: the work done (each task of k counted as
  /// cost[k] / Σ_j weight[j]·cost[j] units) over the span's seconds.
  double units_per_second = 0;
  std::vector<double> windows;  ///< the same rate in each of the span's equal windows, in order
  /// The median of the windows' rates, units of weight per second: the level a window that
  /// another process slowed (a second's stall in one of four) does not pull down.
  double median = 0;
  double spread = 0;            ///< (max - min) / units_per_second over the windows
  /// The windows' jitter, units of weight per second: 1.4826 × their median absolute
  /// deviation from the median (the standard deviation of normal windows; a dip does not
  /// move it).
  double jitter = 0;
  /// The windows below median − 3·jitter (a stall of the machine, not its jitter), in
  /// order of the windows; their loss is the dip term below, not the band's.
  std::vector<std::size_t> dips;
  std::size_t dip_episodes = 0;  ///< runs of consecutive dip windows
  /// Share of the span's work the dips lost: Σ (median − dip) / (median × windows).
  double dip_loss = 0;
  /// Relative width of the 95 % prediction interval of the rate over a next span:
  /// 2·t(0.975, m−1)·jitter·√(1 + 1/m) / median, m the windows (0 with one window) — the
  /// interval of one more window's rate. A span's rate is not taken to average its windows
  /// out: on a machine whose level wanders over seconds (measured: 4 s blocks of a run
  /// spread 0.6–1.0× as much as 1 s windows, where independent windows would give 0.5×) a
  /// next span moves about as much as one window does.
  double band = 0;
  /// The share of the work a next span as long may lose to dips, at the 95 % level: the
  /// 95th percentile of a Poisson count whose mean is the dip episodes seen, each losing the
  /// mean loss of those seen (0 when there was none): it widens only the interval's low end.
  double dip_band = 0;
};

/// The steady rate of a run of the applications drawn in their `weight` mix, from its
/// `completions` (any order). `cost[k]` is a task of k's relative cost (e.g. its host seconds
/// alone), so that a window where the two applications' completions are momentarily out of
/// their mix still counts the work done. The span ends at (1 - `epsilon`)·T, T the first
/// time an application with tasks had all of `tasks[k]` done (beaumont2006 §5.1.1's end);
/// its start is the warm-up truncation point of the MSER rule (White, "An effective
/// truncation heuristic for bias reduction in simulation output", Simulation 69(6), 1997):
/// over batches of `batch` seconds from the first completion, the d (at most half the
/// batches) that minimises the squared standard error of the mean of the batches kept,
/// Σ_{i>=d}(x_i - mean_d)² / (n - d)². The span is then cut into `windows` equal windows,
/// whose median is the level and whose jitter and dips give the band and the dip band.
/// @throws std::invalid_argument when the sizes of weight, cost and tasks differ, a weight
///         or cost is not > 0, batch is not > 0, windows is 0, epsilon is outside [0, 0.5),
///         an application index is out of range, or the completions leave no span of at
///         least `windows` batches.
SteadyRate steady_rate(const std::vector<Completion>& completions, const std::vector<double>& weight,
                       const std::vector<double>& cost, const std::vector<std::uint64_t>& tasks, double epsilon = 0.1,
                       double batch = 0.25, std::size_t windows = 4);

}  // namespace treefarm::tools
