#include "master/TreeCpu.hpp"

#include <set>

namespace treefarm::master {

void TreeCpu::estimates(const std::vector<net::msg::Estimate>& estimates, double at) {
  using What = net::msg::Estimate::What;
  std::set<std::string> fresh;  // nodes whose process CPU is a new report
  for (const auto& e : estimates) {
    if (e.what != What::process_cpu_seconds) continue;
    const auto& s = nodes_[e.node];
    if (!s.empty() && s.back().second == e.mean) continue;  // the same report again
    node(e.node, at, e.mean);
    fresh.insert(e.node);
  }
  // A kernel's total stays still while the node runs other work: it is a new sample when
  // it moved or when it came with a new report of its node's process CPU (it rides on the
  // same heartbeat), so a series still reaches the window's end.
  for (const auto& e : estimates) {
    if (e.what != What::compute_cpu_seconds) continue;
    auto& s = compute_[{e.node, e.app}];
    if (!s.empty() && s.back().second == e.mean && !fresh.contains(e.node)) continue;
    add(s, at, e.mean);
  }
}

void TreeCpu::node(const std::string& node, double at, double cpu_seconds) { add(nodes_[node], at, cpu_seconds); }

void TreeCpu::machine(double at, double idle_seconds) { add(machine_, at, idle_seconds); }

void TreeCpu::add(Series& s, double at, double value) {
  // A running total: a sample before the last in time, or below it (a process restarted
  // under the same name), starts the series again.
  if (!s.empty() && (at <= s.back().first || value < s.back().second)) {
    if (at <= s.back().first && value >= s.back().second) return;
    s.clear();
  }
  s.emplace_back(at, value);
}

std::optional<double> TreeCpu::at(const Series& s, double t) {
  if (s.size() < 2 || t < s.front().first - reach || t > s.back().first + reach) return std::nullopt;
  std::size_t i = 1;
  while (i + 1 < s.size() && s[i].first < t) ++i;
  const auto& [t0, v0] = s[i - 1];
  const auto& [t1, v1] = s[i];
  return v0 + (v1 - v0) * (t - t0) / (t1 - t0);
}

std::optional<double> TreeCpu::over(const Series& s, double lo, double hi) {
  const auto a = at(s, lo), b = at(s, hi);
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

std::optional<double> TreeCpu::node_seconds(const std::string& node, double lo, double hi) const {
  const auto it = nodes_.find(node);
  return it == nodes_.end() ? std::nullopt : over(it->second, lo, hi);
}

std::optional<double> TreeCpu::idle_seconds(double lo, double hi) const { return over(machine_, lo, hi); }

std::optional<double> TreeCpu::compute_seconds(const std::string& node, std::size_t app, double lo, double hi) const {
  const auto it = compute_.find({node, app});
  return it == compute_.end() ? std::nullopt : over(it->second, lo, hi);
}

}  // namespace treefarm::master
