#include "tools/TreeBusyShare.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "runtime/metrics/MachineCpu.hpp"

namespace treefarm::tools {
namespace {

/// A running total at `t`, interpolated between the samples around it; none outside them.
std::optional<TreeCpuSample> at(const std::vector<TreeCpuSample>& s, double t) {
  if (s.empty() || t < s.front().at || t > s.back().at) return std::nullopt;
  const auto hi = std::lower_bound(s.begin(), s.end(), t, [](const TreeCpuSample& x, double v) { return x.at < v; });
  if (hi == s.begin() || hi->at == t) return *hi;
  const auto lo = hi - 1;
  const double w = (t - lo->at) / (hi->at - lo->at);
  return TreeCpuSample{t, lo->tree_cpu_seconds + w * (hi->tree_cpu_seconds - lo->tree_cpu_seconds),
                       lo->idle_seconds + w * (hi->idle_seconds - lo->idle_seconds)};
}

/// The parent's pid and utime + stime + cutime + cstime (seconds) of /proc/PID/stat; none
/// when it is gone.
std::optional<std::pair<long, double>> process_cpu(const std::filesystem::path& stat, double ticks) {
  std::ifstream in(stat);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 > text.size()) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  long ppid = -1;
  double sum = 0;
  // After the name: state(3) ppid(4) ... utime(14) stime cutime cstime(17), proc(5).
  for (int i = 3; i <= 17 && fields >> f; ++i) {
    if (i == 4) ppid = std::strtol(f.c_str(), nullptr, 10);
    if (i >= 14) sum += std::strtod(f.c_str(), nullptr);
  }
  return std::pair{ppid, sum / ticks};
}

}  // namespace

std::optional<double> busy_share(const std::vector<TreeCpuSample>& samples, double lo, double hi) {
  if (!(lo < hi)) return std::nullopt;
  const auto a = at(samples, lo), b = at(samples, hi);
  if (!a || !b) return std::nullopt;
  const double tree = std::max(0.0, b->tree_cpu_seconds - a->tree_cpu_seconds);
  const double idle = std::max(0.0, b->idle_seconds - a->idle_seconds);
  // A tree whose CPU did not grow was not seen working (a window shorter than the
  // counters' tick, or between two samples that read the same): no figure, not 0.
  if (!(tree > 0)) return std::nullopt;
  return std::min(1.0, tree / (tree + idle));
}

std::optional<double> median_busy_share(const std::vector<TreeCpuSample>& samples, double lo, double hi,
                                        std::size_t windows) {
  if (windows == 0 || !(lo < hi)) return std::nullopt;
  std::vector<double> shares;
  const double length = (hi - lo) / static_cast<double>(windows);
  for (std::size_t i = 0; i < windows; ++i)
    if (const auto b = busy_share(samples, lo + static_cast<double>(i) * length,
                                  i + 1 == windows ? hi : lo + static_cast<double>(i + 1) * length))
      shares.push_back(*b);
  if (shares.empty()) return std::nullopt;
  std::sort(shares.begin(), shares.end());
  const std::size_t m = shares.size();
  return m % 2 ? shares[m / 2] : 0.5 * (shares[m / 2 - 1] + shares[m / 2]);
}

std::optional<double> run_busy_share(const std::vector<TreeCpuSample>& samples, const SteadyRate& steady,
                                     double last_completion) {
  if (samples.empty()) return std::nullopt;
  const double shift = std::max(0.0, samples.back().at - last_completion);
  const auto share = median_busy_share(samples, steady.start + shift, steady.end + shift,
                                       std::max<std::size_t>(1, steady.windows.size()));
  return share;
}

double children_cpu_now() {
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const long self = static_cast<long>(::getpid());
  double sum = 0;
  std::error_code ec;
  // Every process whose parent is this one (/proc/PID/task/TID/children needs a kernel
  // built with it; the scan does not).
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (const auto p = process_cpu(entry.path() / "stat", ticks); p && p->first == self) sum += p->second;
  }
  return sum;
}

TreeCpuSampler::TreeCpuSampler(double period) : period_(period), t0_(std::chrono::steady_clock::now()) {
  sample();
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::duration<double>(period_));
      if (!stop_.load()) sample();
    }
  });
}

TreeCpuSampler::~TreeCpuSampler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void TreeCpuSampler::sample() {
  const double tree = children_cpu_now();
  const auto machine = metrics::machine_cpu();
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  if (!machine) return;
  const std::lock_guard lock(mutex_);
  samples_.push_back({t, tree, machine->idle_seconds});
}

std::vector<TreeCpuSample> TreeCpuSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  sample();
  const std::lock_guard lock(mutex_);
  return samples_;
}

}  // namespace treefarm::tools
