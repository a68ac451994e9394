#include "runtime/exec/CpuQuota.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace treefarm::exec {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> first_line(const fs::path& p) {
  std::ifstream f(p);
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;
  return line;
}

std::optional<double> number(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    return used > 0 ? std::optional<double>(v) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The quota set on one group directory: v2 "QUOTA PERIOD" in cpu.max ("max" = none),
/// v1 cpu.cfs_quota_us (−1 = none) and cpu.cfs_period_us.
std::optional<CpuQuota> quota_of(const fs::path& dir) {
  if (const auto max = first_line(dir / "cpu.max")) {
    std::istringstream in(*max);
    std::string q, p;
    in >> q >> p;
    const auto quota = number(q), period = number(p);
    if (q == "max" || !quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
    return CpuQuota{*quota / *period, *period / 1e6, dir.string()};
  }
  const auto q = first_line(dir / "cpu.cfs_quota_us"), p = first_line(dir / "cpu.cfs_period_us");
  if (!q || !p) return std::nullopt;
  const auto quota = number(*q), period = number(*p);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return CpuQuota{*quota / *period, *period / 1e6, dir.string()};
}

}  // namespace

std::optional<CpuQuota> cpu_quota(const std::string& proc_cgroup, const std::string& root) {
  std::ifstream f(proc_cgroup);
  if (!f) return std::nullopt;
  std::vector<fs::path> groups;  // directories of this process's cpu group, in each mount that may hold it
  std::string line;
  while (std::getline(f, line)) {
    // "ID:CONTROLLERS:PATH": v2 is "0::/path"; v1 lists the controllers ("4:cpu,cpuacct:/path").
    const auto a = line.find(':'), b = line.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    const fs::path rel = fs::path(path).relative_path();
    if (controllers.empty()) {
      groups.push_back(fs::path(root) / rel);
      continue;
    }
    std::istringstream names(controllers);
    bool cpu = false;
    for (std::string n; std::getline(names, n, ',');) cpu = cpu || n == "cpu";
    if (!cpu) continue;
    for (const char* mount : {"cpu", "cpu,cpuacct", "cpuacct,cpu"}) groups.push_back(fs::path(root) / mount / rel);
  }
  std::optional<CpuQuota> tightest;
  for (const auto& g : groups) {
    std::error_code ec;
    if (!fs::is_directory(g, ec)) continue;
    for (fs::path dir = g;; dir = dir.parent_path()) {
      if (const auto q = quota_of(dir); q && (!tightest || q->cores < tightest->cores)) tightest = q;
      if (dir == fs::path(root) || !dir.has_relative_path() || dir.parent_path() == dir ||
          dir.string().size() <= root.size())
        break;
    }
  }
  return tightest;
}

}  // namespace treefarm::exec
