#include "runtime/node/CalibrationWindow.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace treefarm::node {

CalibrationWindow::CalibrationWindow(std::vector<std::uint32_t> cores_per_task, std::vector<bool> measure,
                                     std::uint32_t cores, double start, Limits limits)
    : cores_per_task_(std::move(cores_per_task)),
      cores_(cores),
      limits_(limits),
      done_(cores_per_task_.size(), true),
      samples_(cores_per_task_.size()),
      total_(cores_per_task_.size(), 0.0),
      started_(cores_per_task_.size(), start) {
  if (measure.size() != cores_per_task_.size())
    throw std::invalid_argument("CalibrationWindow: " + std::to_string(measure.size()) + " flags for " +
                                std::to_string(cores_per_task_.size()) + " applications");
  for (std::size_t k = 0; k < measure.size(); ++k) done_[k] = !measure[k];
}

std::optional<std::size_t> CalibrationWindow::next() const {
  std::optional<std::size_t> best;
  for (std::size_t k = 0; k < done_.size(); ++k) {
    if (done_[k]) continue;
    if (limits_.sustained) return k;  // one application at a time, in order
    if (!best || total_[k] < total_[*best]) best = k;
  }
  return best;
}

void CalibrationWindow::abandon(std::size_t k) {
  if (k >= done_.size() || done_[k]) return;
  done_[k] = true;
  if (limits_.sustained)  // the next application's window starts now (its clock is set on its first run)
    for (auto& s : started_) s = -1;
}

std::optional<double> CalibrationWindow::record(std::size_t k, double run_seconds, double now) {
  if (k >= done_.size()) throw std::out_of_range("CalibrationWindow::record: no application " + std::to_string(k));
  if (done_[k]) return std::nullopt;
  if (limits_.sustained) {
    // A run of an application that is not the current one: left over from the previous
    // phase (its runs end after it was done), or started before; not counted.
    if (next() != k) return std::nullopt;
  }
  if (started_[k] < 0) started_[k] = now - run_seconds;
  samples_[k].push_back(run_seconds);
  total_[k] += run_seconds;
  if (!enough(k, now)) return std::nullopt;
  done_[k] = true;
  double seconds = mean_run_seconds(k);
  if (limits_.sustained) {
    // Every slot busy with k back to back over the window: runs / window tasks per second
    // from floor(cores / cores_per_task) slots. Never below the runs' own mean.
    const std::uint32_t cpt = std::max<std::uint32_t>(cores_per_task_[k], 1);
    const double slots = std::max<std::uint32_t>(cores_ / cpt, 1);
    seconds = std::max(seconds, window_seconds(k, now) * slots / static_cast<double>(samples_[k].size()));
    for (std::size_t j = 0; j < started_.size(); ++j)
      if (!done_[j]) started_[j] = now;  // the next phase starts now
  }
  return seconds;
}

bool CalibrationWindow::enough(std::size_t k, double now) const {
  const auto& s = samples_[k];
  if (s.size() < limits_.reps || window_seconds(k, now) < limits_.min_window) return false;
  return total_[k] >= limits_.min_kernel_seconds || s.size() >= limits_.max_runs ||
         window_seconds(k, now) >= 3 * limits_.min_kernel_seconds;
}

double CalibrationWindow::window_seconds(std::size_t k, double now) const {
  const double from = started_.at(k) < 0 ? now : started_[k];
  return std::max(now - from, 0.0);
}

double CalibrationWindow::mean_run_seconds(std::size_t k) const {
  const auto& s = samples_.at(k);
  return s.empty() ? 0.0 : total_[k] / static_cast<double>(s.size());
}

double CalibrationWindow::median_run_seconds(std::size_t k) const {
  auto s = samples_.at(k);
  if (s.empty()) return 0.0;
  std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
  return s[s.size() / 2];
}

}  // namespace treefarm::node
