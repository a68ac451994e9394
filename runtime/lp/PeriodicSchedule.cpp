#include "runtime/lp/PeriodicSchedule.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace treefarm::lp {
namespace {

/// floor(rate·period), forgiving the last bits of simplex round-off (2.9999999999 -> 3).
/// The check of the result allows the same relative slack.
std::uint64_t tasks_per_period(double rate, double period) {
  const double x = rate * period;
  if (!(x > 0.0)) return 0;
  return static_cast<std::uint64_t>(std::floor(x * (1.0 + 1e-9)));
}

/// Fair throughput of the schedule rounded down at period P, from per-app totals only.
double fair_at(const PlatformModel& m, const Solution& s, double period) {
  double fair = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    std::uint64_t total = 0;
    for (std::size_t u = 0; u < m.nodes.size(); ++u) total += tasks_per_period(s.alpha[u][k], period);
    fair = std::min(fair, static_cast<double>(total) / (m.apps[k].weight * period));
  }
  return fair;
}

std::string num(double x) {
  std::ostringstream out;
  out << std::setprecision(6) << x;
  return out.str();
}

}  // namespace

PeriodicSchedule periodic_schedule(const PlatformModel& m, const Solution& s,
                                   const ScheduleOptions& options) {
  const std::size_t n = m.nodes.size();
  const std::size_t kk = m.apps.size();
  for (const auto& app : m.apps)  // bertin2008 §2.2 origins: flows go up too; not scheduled here
    if (app.origin != 0)
      throw std::invalid_argument("periodic schedule: application '" + app.name +
                                  "' has an origin other than the root; only trees fed from the root are scheduled");
  if (s.alpha.size() != n || s.app_throughput.size() != kk ||
      std::any_of(s.alpha.begin(), s.alpha.end(), [&](const auto& a) { return a.size() != kk; })) {
    throw std::invalid_argument("periodic_schedule: solution does not match the model (" +
                                std::to_string(n) + " nodes, " + std::to_string(kk) + " apps)");
  }
  if (!(options.max_period > 0.0) || !(options.tolerance >= 0.0)) {
    throw std::invalid_argument("periodic_schedule: max_period must be > 0 s and tolerance >= 0");
  }

  // §3.2 takes the lcm of the denominators; we scan bounded candidate periods instead
  // (PeriodicSchedule.hpp, docs/lp.md).
  double rate_max = 0.0;
  for (const auto& row : s.alpha) {
    for (double a : row) rate_max = std::max(rate_max, a);
  }
  const double target = (1.0 - options.tolerance) * s.fair_throughput;
  double best_period = 0.0, best_fair = -1.0;
  if (rate_max > 0.0) {
    const double unit = std::pow(10.0, std::floor(std::log10(1.0 / rate_max)));
    for (std::uint64_t i = 1; static_cast<double>(i) * unit <= options.max_period;) {
      const double period = static_cast<double>(i) * unit;
      const double fair = fair_at(m, s, period);
      if (fair > best_fair) {
        best_fair = fair;
        best_period = period;
      }
      if (fair >= target) break;
      // Two significant digits: 1..99, then 100, 110, ..., 990, 1000, 1100, ...
      std::uint64_t step = 1;
      while (i >= 100 * step) step *= 10;
      i += step;
    }
  }
  if (best_period == 0.0) best_period = options.max_period;

  PeriodicSchedule p;
  p.period = best_period;
  p.lp_fair_throughput = s.fair_throughput;
  p.computed.assign(n, std::vector<std::uint64_t>(kk, 0));
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t k = 0; k < kk; ++k) p.computed[u][k] = tasks_per_period(s.alpha[u][k], p.period);
  }
  // Conservation, bottom-up (parents come before children).
  p.received = p.computed;
  for (std::size_t u = n; u-- > 1;) {
    for (std::size_t k = 0; k < kk; ++k) p.received[m.nodes[u].parent][k] += p.received[u][k];
  }
  p.app_tasks = p.received[0];
  std::fill(p.received[0].begin(), p.received[0].end(), 0);
  p.fair_throughput = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < kk; ++k) {
    p.fair_throughput = std::min(p.fair_throughput,
                                 static_cast<double>(p.app_tasks[k]) / (m.apps[k].weight * p.period));
  }
  if (kk == 0) p.fair_throughput = 0.0;
  p.relative_loss = s.fair_throughput > 0.0 ? 1.0 - p.fair_throughput / s.fair_throughput : 0.0;
  p.within_tolerance = p.relative_loss <= options.tolerance;
  return p;
}

ScheduleCheck check_schedule(const PlatformModel& m, const PeriodicSchedule& p, double slack) {
  ScheduleCheck check;
  auto fail = [&](std::string what) {
    check.feasible = false;
    check.violations.push_back(std::move(what));
  };
  const std::size_t n = m.nodes.size();
  const std::size_t kk = m.apps.size();
  if (p.computed.size() != n || p.received.size() != n || p.app_tasks.size() != kk) {
    fail("schedule does not match the model's node or application count");
    return check;
  }
  const double limit = p.period * (1.0 + slack);
  std::vector<std::vector<std::uint64_t>> inflow(n, std::vector<std::uint64_t>(kk, 0));
  std::vector<double> port(n, 0.0), out_bytes(n, 0.0);
  for (std::size_t u = 1; u < n; ++u) {
    const auto& node = m.nodes[u];
    double link = 0.0;
    for (std::size_t k = 0; k < kk; ++k) {
      inflow[node.parent][k] += p.received[u][k];
      const double bytes = static_cast<double>(p.received[u][k]) * m.apps[k].bytes;
      out_bytes[node.parent] += bytes;
      if (!std::isinf(node.link_bandwidth)) link += bytes / node.link_bandwidth;
      port[node.parent] += static_cast<double>(p.received[u][k]) * m.port_hold_per_task(u, k);  // latency
    }
    port[node.parent] += link;
    if (m.comm_model == model::CommModel::multi_port && link > limit) {
      fail("link to '" + node.name + "' busy " + num(link) + " s per period of " + num(p.period) + " s");
    }
  }
  std::vector<std::uint64_t> totals(kk, 0);
  for (std::size_t u = 0; u < n; ++u) {
    const auto& node = m.nodes[u];
    double busy = 0.0;
    for (std::size_t k = 0; k < kk; ++k) {
      totals[k] += p.computed[u][k];
      if (p.computed[u][k] > 0 && !m.can_run(u, k)) {
        fail("node '" + node.name + "' computes application '" + m.apps[k].name + "' it cannot run");
        continue;
      }
      if (p.computed[u][k] > 0) {
        busy += static_cast<double>(p.computed[u][k]) * node.task_seconds[k] * m.apps[k].cores_per_task;
      }
      if (u == 0 && p.received[u][k] != 0) fail("root receives tasks of '" + m.apps[k].name + "'");
      if (u > 0 && p.received[u][k] != p.computed[u][k] + inflow[u][k]) {
        fail("conservation at '" + node.name + "' for '" + m.apps[k].name + "': receives " +
             std::to_string(p.received[u][k]) + ", computes " + std::to_string(p.computed[u][k]) +
             ", forwards " + std::to_string(inflow[u][k]));
      }
    }
    if (busy > node.cores * limit) {
      fail("node '" + node.name + "' needs " + num(busy) + " core-seconds per period, has " +
           num(node.cores * p.period));
    }
    if (m.comm_model == model::CommModel::one_port && port[u] > limit) {
      fail("out-port of '" + node.name + "' busy " + num(port[u]) + " s per period of " +
           num(p.period) + " s");
    }
    if (m.comm_model == model::CommModel::multi_port && !std::isinf(node.max_out_bandwidth) &&
        out_bytes[u] > node.max_out_bandwidth * limit) {
      fail("node '" + node.name + "' sends " + num(out_bytes[u]) + " bytes per period, max_out_bandwidth allows " +
           num(node.max_out_bandwidth * p.period));
    }
  }
  for (std::size_t k = 0; k < kk; ++k) {
    if (totals[k] != p.app_tasks[k]) fail("app_tasks of '" + m.apps[k].name + "' is not the sum computed");
  }
  return check;
}

void print_schedule(std::ostream& out, const PlatformModel& m, const PeriodicSchedule& p) {
  out << "Periodic schedule (beaumont2006 §3.2): period " << num(p.period) << " s, fair throughput "
      << num(p.fair_throughput) << " tasks/s per unit of weight (LP " << num(p.lp_fair_throughput)
      << ", " << std::fixed << std::setprecision(2) << 100.0 * p.relative_loss << "% below)\n"
      << std::defaultfloat;
  if (!p.within_tolerance) {
    out << "warning: no period up to the bound gets within tolerance of the LP optimum; "
           "this is the best one found\n";
  }
  out << "\nper period:\n";
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    out << "  " << m.apps[k].name << ": " << p.app_tasks[k] << " per period ("
        << num(static_cast<double>(p.app_tasks[k]) / p.period) << " tasks/s)\n";
  }
  out << "\nnode: computed / received per period, per application (buffer: 2x received, §3.2)\n";
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    out << "  " << m.nodes[u].name << ":";
    std::uint64_t buffer = 0;
    for (std::size_t k = 0; k < m.apps.size(); ++k) {
      out << "  " << m.apps[k].name << " " << p.computed[u][k] << "/" << p.received[u][k];
      buffer += 2 * p.received[u][k];
    }
    out << "  buffer " << buffer << '\n';
  }
}

}  // namespace treefarm::lp
