#include "runtime/lp/HostObservation.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace treefarm::lp {
namespace {

int node_index(const PlatformModel& m, const std::string& name) {
  for (std::size_t u = 0; u < m.nodes.size(); ++u)
    if (m.nodes[u].name == name) return static_cast<int>(u);
  throw std::invalid_argument("a-posteriori model: unknown node '" + name + "'");
}

int app_index(const PlatformModel& m, const std::string& name) {
  for (std::size_t k = 0; k < m.apps.size(); ++k)
    if (m.apps[k].name == name) return static_cast<int>(k);
  throw std::invalid_argument("a-posteriori model: unknown application '" + name + "'");
}

/// The host's CPU charged for the completed tasks with its CPU costs × f.
double charged(PlatformModel m, std::size_t h, double f, const std::vector<std::vector<double>>& n) {
  auto& host = m.hosts[h];
  for (auto& c : host.task_cpu_seconds) c *= f;
  host.comm_cpu_seconds_per_byte *= f;
  host.input_cpu_seconds_per_byte *= f;
  host.receive_cpu_seconds_per_byte *= f;
  double sum = 0;
  for (std::size_t u = 0; u < m.nodes.size(); ++u)
    for (std::size_t k = 0; k < m.apps.size(); ++k)
      if (n[u][k] > 0) sum += n[u][k] * own_host_cpu_per_task(m, u, k);
  return sum;
}

}  // namespace

PlatformModel observed_host_model(PlatformModel model, const HostObservation& obs, HostObservationSummary* summary) {
  if (obs.host < 0 || static_cast<std::size_t>(obs.host) >= model.hosts.size())
    throw std::invalid_argument("a-posteriori model: host " + std::to_string(obs.host) + " of " +
                                std::to_string(model.hosts.size()));
  if (!(obs.window_seconds > 0)) throw std::invalid_argument("a-posteriori model: a steady window of no time");
  const auto h = static_cast<std::size_t>(obs.host);
  const std::size_t n_nodes = model.nodes.size(), n_apps = model.apps.size();
  // Tasks completed per (node, application).
  std::vector<std::vector<double>> n(n_nodes, std::vector<double>(n_apps, 0.0));
  for (const auto& [node, apps] : obs.tasks) {
    const auto u = static_cast<std::size_t>(node_index(model, node));
    for (const auto& [app, count] : apps) {
      if (count <= 0) continue;
      if (model.nodes[u].host != obs.host)
        throw std::invalid_argument("a-posteriori model: node '" + node + "' completed tasks on another host");
      n[u][static_cast<std::size_t>(app_index(model, app))] += count;
    }
  }
  double tree_cpu = 0;
  for (std::size_t u = 0; u < n_nodes; ++u) {
    if (model.nodes[u].host != obs.host) continue;
    const auto it = obs.node_cpu_seconds.find(model.nodes[u].name);
    if (it == obs.node_cpu_seconds.end())
      throw std::invalid_argument("a-posteriori model: no CPU figure of node '" + model.nodes[u].name + "'");
    tree_cpu += std::max(0.0, it->second);
  }
  HostObservationSummary s;
  s.tree_cpu_seconds = tree_cpu;
  auto& host = model.hosts[h];
  // The CPUs the tree could have had × the share of them a saturated tree turns into its
  // own CPU (calibrated; docs/live-model.md): the rest are its processes' waits for one
  // another, which the whole-task costs C(k) hold as idle CPU and f, fitted to the tree's
  // CPU, does not. Without it an idle CPU counted as usable: on a quiet 2-core machine
  // the a posteriori stood above the measured throughput by the window's idle share.
  const double busy = std::isfinite(host.busy_share) && host.busy_share > 0 ? std::min(1.0, host.busy_share) : 1.0;
  host.cores = std::min(host.cores, std::max(obs.available_cpu_seconds, tree_cpu) / obs.window_seconds) * busy;
  if (!(host.cores > 0)) throw std::invalid_argument("a-posteriori model: the tree had no CPU time in the window");
  s.available_cores = host.cores;
  s.busy_share = busy;
  // Per node: the CPU its own tasks really cost. Where the node measured its kernels'
  // CPU (the threads that ran them), that is the kernel's figure: its node row charges its
  // cores with it, and the rest of its process's CPU (the transport's I/O threads, its
  // loop, the copies), which runs beside the kernels on the host's other CPUs, is the host
  // row's (docs/lp.md, "Hosts"); charging the whole process against its cores made a node
  // that used 1.27 CPUs beside its one core infeasible at the point it ran. Otherwise its
  // process's CPU is split over its tasks in the proportion of the host's whole-task costs
  // C(k) (measured through the runtime for every application together) where the host has
  // them for every application it ran, else of its own calibrated kernels: a node's
  // calibrated task times under load are noisier than its CPU (one node's 4 ms and
  // another's 18 ms for the same matmul).
  const auto& whole = host.task_cpu_seconds;
  double used_all = 0, kernel_all = 0;  // over the host's nodes that computed in the window
  std::vector<double> used_k(n_apps, 0.0), kernel_k(n_apps, 0.0);  // the same per application
  std::vector<std::vector<char>> observed(n_nodes, std::vector<char>(n_apps, 0));
  for (std::size_t u = 0; u < n_nodes; ++u) {
    auto& node = model.nodes[u];
    std::vector<double> calibrated(n_apps, 0.0);  // the calibrated kernels of its tasks in the window
    double kernel = 0, by_whole = 0;
    bool have_whole = true;
    for (std::size_t k = 0; k < n_apps; ++k) {
      if (!(n[u][k] > 0)) continue;
      calibrated[k] = n[u][k] * node.task_seconds[k] * node.cpu_share * model.apps[k].cores_per_task;
      kernel += calibrated[k];
      if (k < whole.size() && whole[k] > 0) by_whole += n[u][k] * whole[k];
      else have_whole = false;
    }
    if (!(kernel > 0) || !std::isfinite(kernel)) continue;
    // Its kernels' own CPU, for every application it ran.
    std::vector<double> kernel_cpu(n_apps, 0.0);
    const auto measured = obs.kernel_cpu_seconds.find(node.name);
    bool have_kernel_cpu = measured != obs.kernel_cpu_seconds.end();
    for (std::size_t k = 0; k < n_apps && have_kernel_cpu; ++k) {
      if (!(n[u][k] > 0)) continue;
      const auto it = measured->second.find(model.apps[k].name);
      have_kernel_cpu = it != measured->second.end() && it->second > 0 && std::isfinite(it->second);
      if (have_kernel_cpu) kernel_cpu[k] = it->second;
    }
    double used = 0;
    if (have_kernel_cpu) {
      for (std::size_t k = 0; k < n_apps; ++k) {
        if (!(n[u][k] > 0)) continue;
        node.task_seconds[k] = kernel_cpu[k] / n[u][k] / (node.cpu_share * model.apps[k].cores_per_task);
        observed[u][k] = 1;
        used += kernel_cpu[k];
      }
    } else {
      used = obs.node_cpu_seconds.at(node.name);
      const double g = used / kernel;
      if (!(g > 0) || !std::isfinite(g)) continue;
      for (std::size_t k = 0; k < n_apps; ++k) {
        auto& t = node.task_seconds[k];
        if (!std::isfinite(t) || !(t > 0)) continue;
        if (have_whole && by_whole > 0 && k < whole.size() && whole[k] > 0)
          t = used * whole[k] / by_whole / (node.cpu_share * model.apps[k].cores_per_task);
        else
          t *= g;
        observed[u][k] = 1;
      }
    }
    for (std::size_t k = 0; k < n_apps; ++k) {
      if (!(n[u][k] > 0)) continue;
      used_k[k] += n[u][k] * node.task_seconds[k] * node.cpu_share * model.apps[k].cores_per_task;
      kernel_k[k] += calibrated[k];
    }
    used_all += used;
    kernel_all += kernel;
    s.kernel_factor[node.name] = used / kernel;
  }
  // An application a node of the host did not compute in the window has no observed cost
  // there: its calibrated task time takes the factor the host's nodes that computed it
  // showed (their CPU over their calibrated kernels; over all applications where none
  // did), so that it is not the one node the LP finds cheap only because nothing was
  // observed of it.
  if (kernel_all > 0)
    for (std::size_t u = 0; u < n_nodes; ++u) {
      if (model.nodes[u].host != obs.host) continue;
      for (std::size_t k = 0; k < n_apps; ++k) {
        auto& t = model.nodes[u].task_seconds[k];
        if (observed[u][k] || !std::isfinite(t) || !(t > 0)) continue;
        t *= kernel_k[k] > 0 ? used_k[k] / kernel_k[k] : used_all / kernel_all;
      }
    }
  // The host's whole-task and per-byte costs: f with the charge for the tasks done equal
  // to the tree's CPU (the charge is non-decreasing in f; the kernels alone are at most
  // the computing nodes' CPU, so f = 0 charges at most tree_cpu).
  double lo = 0, hi = 1;
  const bool scalable = charged(model, h, 1, n) > charged(model, h, 0, n);  // else nothing to scale: f = 1
  if (!scalable) lo = hi;
  for (int i = 0; i < 60 && scalable && charged(model, h, hi, n) < tree_cpu; ++i) hi *= 2;
  for (int i = 0; i < 60 && scalable; ++i) {
    const double mid = 0.5 * (lo + hi);
    (charged(model, h, mid, n) < tree_cpu ? lo : hi) = mid;
  }
  const double f = 0.5 * (lo + hi);
  for (auto& c : host.task_cpu_seconds) c *= f;
  host.comm_cpu_seconds_per_byte *= f;
  host.input_cpu_seconds_per_byte *= f;
  host.receive_cpu_seconds_per_byte *= f;
  s.cost_factor = f;
  if (summary) *summary = s;
  return model;
}

}  // namespace treefarm::lp
