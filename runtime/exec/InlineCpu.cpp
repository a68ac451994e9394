#include "runtime/exec/InlineCpu.hpp"

#include <algorithm>
#include <cmath>

namespace treefarm::exec {

namespace {
double& slot(std::vector<std::pair<const void*, double>>& list, const void* app) {
  for (auto& [key, value] : list)
    if (key == app) return value;
  return list.emplace_back(app, 0.0).second;
}
}  // namespace

InlineCpu::InlineCpu(std::function<double()> thread_cpu) : thread_cpu_(std::move(thread_cpu)) {}

void InlineCpu::begin(double now) {
  if (open_) return;
  open_ = true;
  window_start_ = now;
  window_cpu_ = thread_cpu_();
  ++reads_;
}

void InlineCpu::ran(const void* app, double wall_seconds) {
  if (open_ && wall_seconds > 0 && std::isfinite(wall_seconds)) slot(kernel_seconds_, app) += wall_seconds;
}

void InlineCpu::close(double now) {
  if (!open_) return;
  open_ = false;
  const double cpu = thread_cpu_() - window_cpu_;
  ++reads_;
  const double wall = now - window_start_;
  // One thread uses at most its wall time: the share is at most 1 CPU second per second.
  const double per_wall = wall > 0 && cpu > 0 ? std::min(1.0, cpu / wall) : 0.0;
  for (const auto& [app, seconds] : kernel_seconds_) slot(owed_, app) += seconds * per_wall;
  kernel_seconds_.clear();
}

double InlineCpu::take(const void* app) {
  for (auto it = owed_.begin(); it != owed_.end(); ++it)
    if (it->first == app) {
      const double v = it->second;
      owed_.erase(it);
      return v;
    }
  return 0.0;
}

}  // namespace treefarm::exec
