#pragma once
/// @file RunningEstimate.hpp
/// An online estimate of one figure a node observes while it runs (a task's seconds, a
/// link's bytes/s): its mean and spread over the recent samples, with a sequential test
/// that says when the figure has moved (docs/live-model.md).
///
/// The mean and variance are exponentially weighted (weight `alpha` for the newest
/// sample; the first 1/alpha samples are weighted equally, so the estimate starts as the
/// plain mean of what was seen). A calibrated value, when there is one, is the prior: it
/// counts as `prior_weight` samples until the run's own replace it.
///
/// The shift test is a two-sided CUSUM (Page's test) on the relative deviation of each
/// sample from the reference mean — the mean since the last shift:
///   g+ = max(0, g+ + (x/ref − 1) − drift),  g− = max(0, g− − (x/ref − 1) − drift),
/// a shift when g+ or g− exceeds `threshold` after at least `min_samples` samples since
/// the last one. Deviations within ±drift (the platform's own jitter) never accumulate,
/// so a steady figure does not trip it; a figure that moves by a factor f trips it after
/// about threshold / (|f − 1| − drift) samples. After a shift the estimate restarts at
/// the level of the samples that tripped it: of those since the tripping side's sum was
/// last zero (the change point CUSUM estimates), the latest half (the earlier ones may be
/// jitter of the old level, or a task that began before the change and straddles it), and
/// of those the median; so it follows the new level at once.
/// papers/beaumont2006 §4.5 recomputes its rates continuously "to cope with potential
/// availability variations" and §5.1.4 measures c_i and b_i from within the run: this is
/// that measurement, and the test decides when a new LP solution is worth computing.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <boost/circular_buffer.hpp>

namespace treefarm::node {

/// The shift test's parameters (docs/live-model.md, "Parameters").
struct ShiftTestParams {
  double drift = 0.15;              ///< relative deviation per sample that is jitter, not change
  double threshold = 4.0;           ///< accumulated relative deviation that is a change
  std::uint32_t min_samples = 5;    ///< samples since the last shift before another can be declared
};

class RunningEstimate {
 public:
  explicit RunningEstimate(double alpha = 0.1, ShiftTestParams test = {}) : alpha_(alpha), test_(test) {
    if (!(alpha > 0 && alpha <= 1)) throw std::invalid_argument("estimate weight alpha must be in (0, 1]");
    if (!(test.drift >= 0) || !(test.threshold > 0))
      throw std::invalid_argument("shift test: drift must be >= 0 and threshold > 0");
  }

  /// A calibrated value taken as `weight` samples already seen (spread 0).
  void set_prior(double value, double weight = 3) {
    if (!(value > 0) || !std::isfinite(value) || samples_ > 0) return;
    mean_ = ref_ = value;
    ref_n_ = prior_n_ = weight;
  }

  /// A new sample (> 0 and finite; others are ignored). True if it completed a shift.
  bool add(double x) {
    if (!(x > 0) || !std::isfinite(x)) return false;
    ++samples_;
    ++since_shift_;
    // The sequential test against the reference level (before x joins it).
    bool shifted = false;
    if (ref_n_ > 0) {
      const double z = x / ref_ - 1;
      up_ = std::max(0.0, up_ + z - test_.drift);
      down_ = std::max(0.0, down_ - z - test_.drift);
      follow(up_run_, up_, x);
      follow(down_run_, down_, x);
      const bool up = up_ > test_.threshold, down = down_ > test_.threshold;
      if (since_shift_ >= test_.min_samples && (up || down)) {
        shifted = true;
        ++shifts_;
        since_shift_ = 0;
        mean_ = ref_ = level(up ? up_run_ : down_run_, x);
        var_ = 0;
        ref_n_ = 1;
        weighted_n_ = 1;
        prior_n_ = 0;
        up_ = down_ = 0;
        up_run_.clear();
        down_run_.clear();
        return true;
      }
    }
    // The reference: the plain mean since the last shift (with the prior's weight).
    ref_ = (ref_ * ref_n_ + x) / (ref_n_ + 1);
    ref_n_ += 1;
    // The estimate: EWMA mean and variance (West 1979), equal weights while n < 1/alpha.
    weighted_n_ += 1;
    const double a = std::max(alpha_, 1.0 / (weighted_n_ + prior_n_));
    if (weighted_n_ + prior_n_ <= 1) {
      mean_ = x;
      var_ = 0;
    } else {
      const double diff = x - mean_;
      const double incr = a * diff;
      mean_ += incr;
      var_ = (1 - a) * (var_ + diff * incr);
    }
    return shifted;
  }

  bool known() const { return samples_ > 0 || prior_n_ > 0; }
  double mean() const { return mean_; }
  /// Standard deviation of the samples about the mean (same unit as the samples).
  double spread() const { return std::sqrt(std::max(0.0, var_)); }
  /// Spread relative to the mean (0 when unknown).
  double relative_spread() const { return mean_ > 0 ? spread() / mean_ : 0.0; }
  /// Samples seen in the whole run, and since the last shift.
  std::uint64_t samples() const { return samples_; }
  std::uint64_t since_shift() const { return since_shift_; }
  /// Shifts declared so far.
  std::uint32_t shifts() const { return shifts_; }

 private:
  double alpha_;
  ShiftTestParams test_;
  double mean_ = 0, var_ = 0;
  double weighted_n_ = 0, prior_n_ = 0;
  double ref_ = 0, ref_n_ = 0;
  double up_ = 0, down_ = 0;
  /// The samples since each side's sum was last zero (the latest max_run_ of them): a ring
  /// that takes no memory until its first sample. An empty std::deque holds ~600 bytes,
  /// and a node keeps one estimate per application and per link: 1.3 GB of a 100,000-node
  /// simulation (docs/benchmarks.md, "Simulation and LP").
  using Run = boost::circular_buffer<double>;
  Run up_run_, down_run_;
  static constexpr std::size_t max_run_ = 64;

  /// Keeps `run` as the samples that make up a side's sum `g` (x the newest).
  static void follow(Run& run, double g, double x) {
    if (g == 0) return run.clear();
    if (run.capacity() == 0) run.set_capacity(max_run_);
    run.push_back(x);  // full: the oldest goes
  }
  /// The new level after a shift: the median of the latest half of `run` (at least one).
  static double level(const Run& run, double x) {
    if (run.empty()) return x;
    std::vector<double> last(run.end() - static_cast<std::ptrdiff_t>(std::max<std::size_t>(1, run.size() / 2)), run.end());
    const auto mid = last.begin() + static_cast<std::ptrdiff_t>(last.size() / 2);
    std::nth_element(last.begin(), mid, last.end());
    if (last.size() % 2) return *mid;
    return (*mid + *std::max_element(last.begin(), mid)) / 2;
  }
  std::uint64_t samples_ = 0, since_shift_ = 0;
  std::uint32_t shifts_ = 0;
};

}  // namespace treefarm::node
