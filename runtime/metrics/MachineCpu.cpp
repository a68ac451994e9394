#include "runtime/metrics/MachineCpu.hpp"

#include <fstream>
#include <sstream>
#include <vector>

#include <unistd.h>

namespace treefarm::metrics {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return in ? out.str() : std::string();
}

}  // namespace

std::optional<MachineCpu> parse_proc_stat(const std::string& text, double ticks_per_second) {
  if (!(ticks_per_second > 0)) return std::nullopt;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string label;
    if (!(in >> label) || label != "cpu") continue;
    std::vector<double> f;
    for (double x; f.size() < 8 && in >> x;) f.push_back(x);
    if (f.size() < 4) return std::nullopt;
    MachineCpu m;
    m.idle_seconds = (f[3] + (f.size() > 4 ? f[4] : 0.0)) / ticks_per_second;  // idle + iowait
    for (double x : f) m.total_seconds += x / ticks_per_second;  // guest time is already in user
    return m;
  }
  return std::nullopt;
}

std::optional<MachineCpu> machine_cpu() {
  return parse_proc_stat(read_text("/proc/stat"), static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

std::optional<double> parse_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || !(period > 0)) return std::nullopt;
  try {
    const double q = std::stod(quota);
    if (q > 0) return q / period;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<double> cgroup_cpu_limit() {
  // /proc/self/cgroup on cgroup v2: "0::/the/path".
  std::istringstream lines(read_text("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) return parse_cpu_max(read_text("/sys/fs/cgroup" + line.substr(3) + "/cpu.max"));
  return std::nullopt;
}

}  // namespace treefarm::metrics
