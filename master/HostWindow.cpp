#include "master/HostWindow.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace treefarm::master {

namespace {

/// Everything but the tasks: the CPU figures of [lo, hi].
lp::HostObservation cpu_part(const lp::PlatformModel& model, int host, const HostSources& from, double lo, double hi) {
  lp::HostObservation obs;
  obs.host = host;
  obs.window_seconds = hi - lo;
  std::string missing;
  for (const auto& node : model.nodes) {
    if (node.host != host) continue;
    if (const auto c = from.cpu.node_seconds(node.name, lo, hi)) obs.node_cpu_seconds[node.name] = *c;
    else missing += (missing.empty() ? "" : ", ") + node.name;
  }
  const auto idle = from.cpu.idle_seconds(lo, hi);
  if (!missing.empty() || !idle) {
    char window[64];
    std::snprintf(window, sizeof window, "[%.1f, %.1f] s", lo, hi);
    throw std::runtime_error("no CPU samples of " + (missing.empty() ? std::string("the machine") : missing) +
                             " over the steady window " + window +
                             " (the heartbeats carry them every second: a run this short, or a node that joined "
                             "late, has none)");
  }
  double tree = 0;
  for (const auto& [name, c] : obs.node_cpu_seconds) tree += c;
  obs.available_cpu_seconds = *idle + tree;
  if (from.cpu_limit) obs.available_cpu_seconds = std::min(obs.available_cpu_seconds, *from.cpu_limit * obs.window_seconds);
  return obs;
}

/// Each node's kernels' own CPU over [lo, hi] per application it completed tasks of,
/// where it reported it (a node without it: its process's CPU stands for its kernels).
void kernels(lp::HostObservation& obs, const HostSources& from, double lo, double hi) {
  const auto& apps = from.results.apps;
  for (const auto& [node, done] : obs.tasks)
    for (std::size_t k = 0; k < apps.size(); ++k)
      if (done.contains(apps[k].name))
        if (const auto c = from.cpu.compute_seconds(node, k, lo, hi)) obs.kernel_cpu_seconds[node][apps[k].name] = *c;
}

}  // namespace

int shared_root_host(const lp::PlatformModel& model) {
  const int h = model.nodes.empty() ? -1 : model.nodes[0].host;
  if (h < 0 || std::count_if(model.nodes.begin(), model.nodes.end(), [&](const auto& n) { return n.host == h; }) < 2)
    return -1;
  return h;
}

lp::HostObservation observe_host(const lp::PlatformModel& model, int host, const HostSources& from, double lo, double hi) {
  return observe_host_windows(model, host, from, lo, hi, 0).whole;
}

lp::HostWindows observe_host_windows(const lp::PlatformModel& model, int host, const HostSources& from, double lo,
                                     double hi, std::size_t parts) {
  lp::HostWindows out;
  out.whole = cpu_part(model, host, from, lo, hi);
  const double length = parts > 0 ? (hi - lo) / static_cast<double>(parts) : 0.0;
  for (std::size_t i = 0; i < parts; ++i)
    out.parts.push_back(cpu_part(model, host, from, lo + static_cast<double>(i) * length,
                                 i + 1 == parts ? hi : lo + static_cast<double>(i + 1) * length));
  const auto& apps = from.results.apps;
  from.results.for_each_task([&](const metrics::TaskView& t) {
    if (t.completed_at < lo || t.completed_at > hi || t.app >= apps.size()) return;
    out.whole.tasks[std::string(t.node)][apps[t.app].name] += 1;
    if (parts == 0) return;
    const auto i = std::min(parts - 1, static_cast<std::size_t>(std::max(0.0, (t.completed_at - lo) / length)));
    out.parts[i].tasks[std::string(t.node)][apps[t.app].name] += 1;
  });
  kernels(out.whole, from, lo, hi);
  for (std::size_t i = 0; i < parts; ++i)
    kernels(out.parts[i], from, lo + static_cast<double>(i) * length, i + 1 == parts ? hi : lo + static_cast<double>(i + 1) * length);
  return out;
}

}  // namespace treefarm::master
