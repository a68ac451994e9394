#include "runtime/node/CalibrationWindow.hpp"

#include <algorithm>
#include <stdexcept>

namespace treefarm::node {

CalibrationWindow::CalibrationWindow(std::vector<std::uint32_t> cores_per_task, std::uint32_t cores, double start,
                                     Limits limits)
    : cores_per_task_(std::move(cores_per_task)),
      start_(start),
      limits_(limits),
      samples_(cores_per_task_.size()),
      total_(cores_per_task_.size(), 0.0) {
  // The cores the runs can keep busy: with 2-core tasks on 3 cores one core stays idle
  // (unless a 1-core application fills it).
  std::uint32_t fill = 0;
  for (const auto c : cores_per_task_)
    if (c > 0 && c <= cores) fill = std::max(fill, cores / c * c);
  capacity_ = std::max<double>(fill, 1);
}

void CalibrationWindow::record(std::size_t k, double run_seconds, double /*now*/) {
  if (k >= samples_.size()) throw std::out_of_range("CalibrationWindow::record: no application " + std::to_string(k));
  samples_[k].push_back(run_seconds);
  total_[k] += run_seconds;
  all_core_seconds_ += run_seconds * std::max<std::uint32_t>(cores_per_task_[k], 1);
}

bool CalibrationWindow::enough(std::size_t k, double now) const {
  const auto& s = samples_.at(k);
  const double elapsed = now - start_;
  if (s.size() < limits_.reps || elapsed < limits_.min_window) return false;
  return total_[k] >= limits_.min_kernel_seconds || s.size() >= limits_.max_runs ||
         elapsed >= 3 * limits_.min_kernel_seconds;
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

double CalibrationWindow::sustained_seconds(std::size_t k, double now) const {
  const auto& s = samples_.at(k);
  if (s.empty() || all_core_seconds_ <= 0) return mean_run_seconds(k);
  const double cpt = std::max<std::uint32_t>(cores_per_task_[k], 1);
  const double share = total_[k] * cpt / all_core_seconds_;
  const double window = std::max(now - start_, 0.0) * capacity_;
  const double sustained = window * share / (static_cast<double>(s.size()) * cpt);
  return std::max(sustained, mean_run_seconds(k));
}

}  // namespace treefarm::node
