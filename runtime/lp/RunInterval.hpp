#pragma once
/// @file RunInterval.hpp
/// The prediction interval from a run's own estimates (docs/live-model.md, "The
/// prediction interval"): once every figure the run has measured of itself is tight, the
/// LP (papers/beaumont2006 §3.1, LP (3)) is solved with every figure at the pessimistic
/// end of its 95 % confidence interval, then at the optimistic end, as
/// lp::prediction_interval does with a calibration's spread. The LP's model is the
/// a-posteriori one (lp::observed_model, lp::observed_host_model) over the part of the run
/// seen so far; the interval is never the measured throughput extrapolated.
///
/// The figures:
/// - a node alone on its machine: its task time of each application and the bandwidth of
///   its link (a link the model bounds), each a RunningEstimate with its spread (the
///   confidence interval of its mean as lp::relative_half_width gives it);
/// - a machine several nodes share (every node of `treefarm run`): the span seen so far is
///   cut into equal windows, and in each the CPUs available to the tree (its idle time
///   plus its own CPU time, over the window's seconds), the tree's CPU seconds per task
///   and each computing node's CPU seconds per task of its own; each figure's mean and the
///   95 % confidence interval of that mean from the windows as independent samples
///   (Student's t with m − 1 degrees of freedom). A task counts as its application's
///   whole-task CPU cost on the host (as a unit of work) when the host has one for every
///   application, else as one.
/// At the ends a node that reports its kernels' own CPU (HostObservation::kernel_cpu_seconds)
/// has those at the ends of its own figure (its node row) and its process's CPU at the
/// ends of the tree's (the host row charges the tree's sum); a node that does not, its
/// process's CPU at the ends of its own figure.
/// The LP's optimum falls with a figure's task time and CPU cost and rises with its
/// bandwidth and available CPUs, so the two solutions bound every mix of the figures.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/lp/HostObservation.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::lp {

/// t(0.975, df): the quantile of Student's t with `df` degrees of freedom for a two-sided 95 %
/// interval (Boost.Math); infinite for df = 0.
double t975(std::size_t df);

/// When the interval is made: every figure has enough samples (`[policy.lp]` plan_samples,
/// as the plan made from the estimates, lp::EstimatePlanOptions) or windows (a shared
/// machine) and a finite interval, and either every figure is within ±max_half_width
/// (`[policy.lp]` plan_ci) or the interval the LP gives over them is within ±max_interval
/// of its median. The figures wider than ±max_half_width are named among the loose ones
/// while the interval is too wide (they say why).
struct RunIntervalOptions {
  double max_half_width = 0.05;     ///< relative half-width of a figure's 95 % interval named as wide
  double max_interval = 0.10;       ///< relative half-width of the interval, at each end
  std::uint32_t min_samples = 10;   ///< samples of every node's estimate
  std::uint32_t min_windows = 4;    ///< windows of a shared machine's figures
  double effective_samples = 19;    ///< most samples a RunningEstimate's mean is worth
};

/// One figure: its mean and the relative half-width of the 95 % confidence interval of it.
struct IntervalFigure {
  std::string name;
  double mean = 0;
  double half = 0;  ///< relative; +inf when it cannot be told (fewer than 2 samples)
  std::vector<double> samples = {};  ///< a shared machine's: the figure in each window, in order
};

/// `name`'s mean over `samples` (independent) and the relative half-width of its 95 %
/// confidence interval, t(0.975, m − 1) · sd / (√m · mean).
IntervalFigure mean_interval(std::string name, const std::vector<double>& samples);

/// What a shared machine gave the tree over the span seen so far: the whole span and
/// its equal windows, in order.
struct HostWindows {
  HostObservation whole;
  std::vector<HostObservation> parts;
};

/// The interval, and why there is none yet.
struct RunInterval {
  double low = 0;     ///< tasks/s per unit of weight: every figure at its pessimistic end
  double median = 0;  ///< tasks/s per unit of weight: every figure at its mean
  double high = 0;    ///< tasks/s per unit of weight: every figure at its optimistic end
  std::vector<IntervalFigure> figures;
  /// The LP's model at the figures' means (the median's), once the three are solved.
  std::optional<PlatformModel> model;
  /// Why there is no interval yet, one line each ("w1: task time of 'mm': 4 of 10 samples",
  /// "host: CPUs available: ±7.1 % > ±5.0 %", "the interval: -12.0 % to +8.1 % > ±10.0 %");
  /// empty: the interval is made. low, median and high are solved once every figure has
  /// its samples, even when the interval is still too wide.
  std::vector<std::string> loose;
  bool tight() const { return loose.empty(); }
};

/// The interval of `model` (the model the run plans with) from the run's estimates:
/// `estimates` (the tree's latest), `host` (a machine the root shares with other nodes,
/// as observed so far; none when there is no such machine). Solves the LP three times
/// once every figure has its samples and a finite interval; the interval is made (tight())
/// when every figure is within ±max_half_width or the interval within ±max_interval. With no figure at all nothing is tight ("no estimate
/// yet"). Throws what observed_host_model() and solve() throw.
RunInterval run_interval(const PlatformModel& model, const std::vector<net::msg::Estimate>& estimates,
                         const std::optional<HostWindows>& host, const RunIntervalOptions& options = {});

}  // namespace treefarm::lp
