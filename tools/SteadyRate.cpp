#include "tools/SteadyRate.hpp"

#include "runtime/lp/RunInterval.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace treefarm::tools {

namespace {
double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}
}  // namespace

SteadyRate steady_rate(const std::vector<Completion>& completions, const std::vector<double>& weight,
                       const std::vector<double>& cost, const std::vector<std::uint64_t>& tasks, double epsilon,
                       double batch, std::size_t windows) {
  const std::size_t apps = weight.size();
  if (cost.size() != apps || tasks.size() != apps)
    throw std::invalid_argument("steady_rate: " + std::to_string(apps) + " weights, " + std::to_string(cost.size()) +
                                " costs and " + std::to_string(tasks.size()) + " task counts (expected as many of each)");
  double unit = 0;  // the cost of one unit of weight
  for (std::size_t k = 0; k < apps; ++k) {
    if (!(weight[k] > 0) || !(cost[k] > 0) || !std::isfinite(cost[k]))
      throw std::invalid_argument("steady_rate: application " + std::to_string(k) + " needs a weight > 0 and a finite cost > 0");
    unit += weight[k] * cost[k];
  }
  if (!(batch > 0)) throw std::invalid_argument("steady_rate: batch must be > 0 seconds");
  if (windows == 0) throw std::invalid_argument("steady_rate: windows must be >= 1");
  if (!(epsilon >= 0 && epsilon < 0.5)) throw std::invalid_argument("steady_rate: epsilon must be in [0, 0.5)");
  if (completions.empty()) throw std::invalid_argument("steady_rate: no completions");

  std::vector<std::uint64_t> done(apps, 0);
  std::vector<double> last(apps, 0.0);
  double first = std::numeric_limits<double>::infinity(), latest = 0;
  for (const auto& c : completions) {
    if (c.app >= apps) throw std::invalid_argument("steady_rate: application index " + std::to_string(c.app) + " out of range");
    ++done[c.app];
    last[c.app] = std::max(last[c.app], c.at);
    first = std::min(first, c.at);
    latest = std::max(latest, c.at);
  }
  // T: the first time an application had all its tasks done (the journal of a run cut
  // short: its last completion).
  double t = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < apps; ++k)
    if (tasks[k] > 0 && done[k] >= tasks[k]) t = std::min(t, last[k]);
  if (!std::isfinite(t)) t = latest;
  const double end = (1.0 - epsilon) * t;
  const auto n = static_cast<std::size_t>(std::max(0.0, std::floor((end - first) / batch)));
  if (n < 2 * windows)
    throw std::invalid_argument("steady_rate: " + std::to_string(n) + " batches of " + std::to_string(batch) +
                                " s before the end of the run's steady part; at least " + std::to_string(2 * windows) +
                                " needed (a longer run)");

  // Work per batch, in units of weight per second.
  std::vector<double> x(n, 0.0);
  for (const auto& c : completions) {
    const double i = std::floor((c.at - first) / batch);
    if (i >= 0 && i < static_cast<double>(n)) x[static_cast<std::size_t>(i)] += cost[c.app] / unit / batch;
  }
  // MSER: the truncation that minimises the squared standard error of the mean kept.
  std::size_t best = 0;
  double best_stat = std::numeric_limits<double>::infinity();
  for (std::size_t d = 0; d <= n / 2; ++d) {
    const auto kept = static_cast<double>(n - d);
    double sum = 0;
    for (std::size_t i = d; i < n; ++i) sum += x[i];
    const double mean = sum / kept;
    double sse = 0;
    for (std::size_t i = d; i < n; ++i) sse += (x[i] - mean) * (x[i] - mean);
    const double stat = sse / (kept * kept);
    if (stat < best_stat) {
      best_stat = stat;
      best = d;
    }
  }

  SteadyRate out;
  out.start = first + static_cast<double>(best) * batch;
  out.end = first + static_cast<double>(n) * batch;
  const double length = (out.end - out.start) / static_cast<double>(windows);
  std::vector<double> work(windows, 0.0);
  double total = 0;
  for (const auto& c : completions) {
    if (c.at < out.start || c.at >= out.end) continue;
    const auto j = std::min(windows - 1, static_cast<std::size_t>((c.at - out.start) / length));
    work[j] += cost[c.app] / unit;
    total += cost[c.app] / unit;
  }
  out.units_per_second = total / (out.end - out.start);
  for (const double w : work) out.windows.push_back(w / length);
  out.median = median_of(out.windows);
  const auto [lo, hi] = std::minmax_element(out.windows.begin(), out.windows.end());
  out.spread = out.units_per_second > 0 ? (*hi - *lo) / out.units_per_second : 0.0;
  // The jitter: the windows' median absolute deviation, scaled to a normal's standard
  // deviation, so that a window a stall cut short does not widen the band; such a window
  // (below median - 3 jitters) is a dip, counted apart.
  std::vector<double> deviation;
  for (const double w : out.windows) deviation.push_back(std::abs(w - out.median));
  out.jitter = 1.4826 * median_of(std::move(deviation));
  bool in_dip = false;
  for (std::size_t i = 0; i < out.windows.size(); ++i) {
    const bool dip = out.windows[i] < out.median - 3 * out.jitter && out.windows[i] < out.median;
    if (dip) {
      out.dips.push_back(i);
      out.dip_loss += (out.median - out.windows[i]) / (out.median * static_cast<double>(windows));
      if (!in_dip) ++out.dip_episodes;
    }
    in_dip = dip;
  }
  // The interval of one more window's rate: t(0.975, m - 1)·jitter·√(1 + 1/m). Not the
  // mean's (√(2/m)): the windows of a machine whose level wanders are not independent.
  if (windows >= 2 && out.median > 0) {
    const std::size_t df = windows - 1;
    const double quantile = lp::t975(df);
    out.band = 2.0 * quantile * out.jitter * std::sqrt(1.0 + 1.0 / static_cast<double>(windows)) / out.median;
  }
  // A next span as long sees as many dip episodes as a Poisson count of mean those seen:
  // at its 95th percentile, each losing the mean loss of those seen.
  if (out.dip_episodes > 0) {
    const double lambda = static_cast<double>(out.dip_episodes);
    double p = std::exp(-lambda), cdf = p;
    std::size_t q = 0;
    while (cdf < 0.95) {
      ++q;
      p *= lambda / static_cast<double>(q);
      cdf += p;
    }
    out.dip_band = std::min(1.0, static_cast<double>(q) / lambda * out.dip_loss);
  }
  return out;
}

}  // namespace treefarm::tools
