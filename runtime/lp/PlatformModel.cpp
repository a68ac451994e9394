#include "runtime/lp/PlatformModel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "runtime/core/NodeState.hpp"

namespace treefarm::lp {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

std::string fmt(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

[[noreturn]] void node_error(const std::string& node, const std::string& field,
                             const std::string& message) {
  throw std::invalid_argument("node '" + node + "': field '" + field + "': " + message);
}

[[noreturn]] void app_error(const std::string& app, const std::string& field,
                            const std::string& message) {
  throw std::invalid_argument("application '" + app + "': field '" + field + "': " + message);
}

/// A rate must be > 0 (and may be +inf); NaN, zero and negative values are errors.
void check_positive(const std::string& node, const std::string& field, double value,
                    const char* unit) {
  if (!(value > 0.0)) node_error(node, field, "must be > 0 " + std::string(unit) + ", got " + fmt(value));
}

}  // namespace

double PlatformModel::port_hold_per_task(std::size_t u, std::size_t k) const {
  const double hold = nodes[u].port_hold;
  const double bytes = apps[k].bytes;
  const auto window = static_cast<double>(one_port_window);
  if (one_port_window == 0 || bytes > static_cast<double>(model::one_port_release_limit(one_port_window))) return hold;
  if (bytes <= 0) return 0.0;
  return hold / std::floor(window / bytes);
}

bool PlatformModel::can_run(std::size_t u, std::size_t k) const {
  const Node& node = nodes[u];
  const double t = node.task_seconds[k];
  return node.cores >= apps[k].cores_per_task && node.cores > 0 && t > 0.0 && std::isfinite(t);
}

bool PlatformModel::flows_up(std::size_t u, std::size_t k) const {
  if (u == 0) return false;
  for (std::size_t v = apps[k].origin; v < nodes.size(); v = static_cast<std::size_t>(nodes[v].parent)) {
    if (v == u) return true;
    if (v == 0) break;
  }
  return false;
}

int PlatformModel::upstream(std::size_t u, std::size_t k) const {
  if (u == apps[k].origin) return -1;
  if (!flows_up(u, k) || u == 0) {
    // The origin is not below u: towards it is up, unless u is the root (then it is below).
    if (u != 0) return nodes[u].parent;
  }
  // The origin is below u: the child of u on the path from the origin.
  std::size_t v = apps[k].origin;
  while (nodes[v].parent != static_cast<int>(u)) v = static_cast<std::size_t>(nodes[v].parent);
  return static_cast<int>(v);
}

void validate(const PlatformModel& model) {
  if (model.nodes.empty()) throw std::invalid_argument("platform model: no node");
  for (std::size_t k = 0; k < model.apps.size(); ++k) {
    const auto& app = model.apps[k];
    if (!(app.weight > 0.0) || !std::isfinite(app.weight)) {
      app_error(app.name, "weight", "must be a finite number > 0, got " + fmt(app.weight));
    }
    if (app.cores_per_task == 0) app_error(app.name, "cores_per_task", "must be >= 1, got 0");
    if (app.origin >= model.nodes.size())
      app_error(app.name, "origin", "must be a node index < " + std::to_string(model.nodes.size()) + ", got " +
                                        std::to_string(app.origin));
    if (!(app.bytes >= 0.0) || !std::isfinite(app.bytes)) {
      app_error(app.name, "bytes", "must be a finite number >= 0, got " + fmt(app.bytes));
    }
    if (!(app.result_bytes >= 0.0) || !std::isfinite(app.result_bytes))
      app_error(app.name, "result_bytes", "must be a finite number >= 0, got " + fmt(app.result_bytes));
  }
  for (std::size_t u = 0; u < model.nodes.size(); ++u) {
    const auto& node = model.nodes[u];
    if (u == 0 && node.parent != -1) node_error(node.name, "parent", "node 0 must be the root (parent -1)");
    if (u > 0 && (node.parent < 0 || static_cast<std::size_t>(node.parent) >= u)) {
      node_error(node.name, "parent",
                 "must be the index of an earlier node, got " + std::to_string(node.parent));
    }
    if (u > 0) check_positive(node.name, "bandwidth", node.link_bandwidth, "bytes/s");
    if (node.host < -1 || node.host >= static_cast<int>(model.hosts.size()))
      node_error(node.name, "host", "must be -1 or the index of a host, got " + std::to_string(node.host));
    if (!(node.cpu_share > 0.0 && node.cpu_share <= 1.0))
      node_error(node.name, "cpu_share", "must be in (0, 1], got " + fmt(node.cpu_share));
    check_positive(node.name, "max_out_bandwidth", node.max_out_bandwidth, "bytes/s");
    if (!(node.request_round_trip >= 0.0) || !std::isfinite(node.request_round_trip))
      node_error(node.name, "request_round_trip", "must be >= 0 seconds, got " + fmt(node.request_round_trip));
    if (!(node.port_hold >= 0.0) || !std::isfinite(node.port_hold))
      node_error(node.name, "port_hold", "must be >= 0 seconds, got " + fmt(node.port_hold));
    if (node.task_seconds.size() != model.apps.size()) {
      node_error(node.name, "task_seconds",
                 "has " + std::to_string(node.task_seconds.size()) + " entries for " +
                     std::to_string(model.apps.size()) + " applications");
    }
    for (std::size_t k = 0; k < model.apps.size(); ++k) {
      if (std::isnan(node.task_seconds[k]) || node.task_seconds[k] < 0.0) {
        node_error(node.name, "task_seconds",
                   "for application '" + model.apps[k].name + "' must be >= 0 seconds, got " +
                       fmt(node.task_seconds[k]));
      }
    }
  }
  for (const auto& host : model.hosts) {
    if (!(host.cores > 0.0) || !std::isfinite(host.cores))
      throw std::invalid_argument("host '" + host.name + "': field 'cores': must be a finite number > 0, got " +
                                  fmt(host.cores));
    for (const auto& [field, value] : {std::pair{"comm_cpu_seconds_per_byte", host.comm_cpu_seconds_per_byte},
                                       std::pair{"input_cpu_seconds_per_byte", host.input_cpu_seconds_per_byte},
                                       std::pair{"receive_cpu_seconds_per_byte", host.receive_cpu_seconds_per_byte}})
      if (!(value >= 0.0) || !std::isfinite(value))
        throw std::invalid_argument("host '" + host.name + "': field '" + field + "': must be a finite number >= 0, got " +
                                    fmt(value));
  }
  for (std::size_t k = 0; k < model.apps.size(); ++k) {
    bool runnable = false;
    for (std::size_t u = 0; u < model.nodes.size() && !runnable; ++u) runnable = model.can_run(u, k);
    if (!runnable) {
      throw std::invalid_argument(
          "application '" + model.apps[k].name + "': no node can run it (a node needs cores >= " +
          std::to_string(model.apps[k].cores_per_task) +
          " (cores_per_task) and a positive task duration: a speed with flops > 0, or a "
          "calibrated duration)");
    }
  }
}

PlatformModel model_from_experiment(const model::Experiment& experiment,
                                    const MeasuredSeconds* measured_seconds,
                                    const MeasuredBandwidth* measured_bandwidth) {
  PlatformModel out;
  out.comm_model = experiment.run.comm_model;
  out.buffer = experiment.run.buffer;
  double max_out = inf;
  if (experiment.run.max_out_bandwidth) {
    max_out = *experiment.run.max_out_bandwidth;
    if (!(max_out > 0.0)) {
      throw std::invalid_argument("run: field 'max_out_bandwidth': must be > 0 bytes/s, got " +
                                  fmt(max_out));
    }
  }
  for (const auto& spec : experiment.apps) {
    PlatformModel::App app;
    app.name = spec.name;
    app.bytes = static_cast<double>(spec.input_bytes());
    app.weight = spec.weight;
    app.cores_per_task = spec.cores_per_task;
    if (!spec.origin.empty()) app.origin = experiment.node_index(spec.origin).value_or(0);  // checked by the parser
    out.apps.push_back(app);
  }

  std::unordered_map<std::string, int> index;
  for (std::size_t u = 0; u < experiment.nodes.size(); ++u) {
    const auto& spec = experiment.nodes[u];
    PlatformModel::Node node;
    node.name = spec.name;
    node.cores = spec.cores;
    node.max_out_bandwidth = max_out;
    if (!spec.parent) {
      if (u != 0) node_error(spec.name, "parent", "only node 0 (the master) may have no parent");
      node.parent = -1;
    } else {
      const auto it = index.find(*spec.parent);
      if (it == index.end()) {
        node_error(spec.name, "parent", "'" + *spec.parent + "' is not a node listed before it");
      }
      node.parent = it->second;
    }
    if (u == 0 && spec.parent) node_error(spec.name, "parent", "node 0 must be the master (no parent)");

    // Link from the parent: calibration first, then the experiment, then loopback.
    node.link_bandwidth = inf;
    if (spec.bandwidth) {
      check_positive(spec.name, "bandwidth", *spec.bandwidth, "bytes/s");
      node.link_bandwidth = *spec.bandwidth;
    }
    if (measured_bandwidth) {
      if (const auto it = measured_bandwidth->find(spec.name); it != measured_bandwidth->end()) {
        check_positive(spec.name, "measured bandwidth", it->second, "bytes/s");
        node.link_bandwidth = it->second;
      }
    }
    if (u == 0) node.link_bandwidth = inf;
    if (u > 0 && spec.latency > 0) {
      check_positive(spec.name, "latency", spec.latency, "seconds");
      node.request_round_trip = 2 * spec.latency;
      node.port_hold = spec.latency;
    }
    if (spec.speed) check_positive(spec.name, "speed", *spec.speed, "flop/s");

    const std::map<std::string, double>* measured = nullptr;
    if (measured_seconds) {
      if (const auto it = measured_seconds->find(spec.name); it != measured_seconds->end()) {
        measured = &it->second;
      }
    }
    node.task_seconds.assign(out.apps.size(), inf);
    for (std::size_t k = 0; k < out.apps.size(); ++k) {
      const auto& app = experiment.apps[k];
      if (spec.cores == 0 || spec.cores < app.cores_per_task) continue;  // cannot run k
      if (measured) {
        if (const auto it = measured->find(app.name); it != measured->end()) {
          if (!(it->second > 0.0)) {
            node_error(spec.name, "measured seconds",
                       "for application '" + app.name + "' must be > 0, got " + fmt(it->second));
          }
          node.task_seconds[k] = it->second;
          continue;
        }
      }
      if (app.kernel == model::Kernel::command)  // no flop count, only a measured duration
        throw model::FileError(experiment.path, app.line, "app[" + std::to_string(k) + "].kernel",
                               "application '" + app.name + "' runs a command: its duration on node '" + spec.name +
                                   "' is known only from a calibration; give --calibration FILE (treefarm calibrate)");
      if (!spec.speed) {
        // Names file and line: the usual cause is `predict` without a calibration.
        throw model::FileError(experiment.path, spec.line, "node[" + std::to_string(u) + "].speed",
                               "node '" + spec.name + "' computes (cores = " + std::to_string(spec.cores) +
                                   ") but has no speed (flop/s per core) and no calibrated duration for "
                                   "application '" + app.name +
                                   "': give --calibration FILE (treefarm calibrate) or a speed such as \"2Gf\"");
      }
      // A task spreads its flop over its cores_per_task cores (beaumont2006 §2.1: time
      // c(k)/c_u, with c_u the speed of the cores the task holds).
      node.task_seconds[k] = app.task_flops() / (app.cores_per_task * *spec.speed);
    }
    index.emplace(spec.name, static_cast<int>(u));
    out.nodes.push_back(std::move(node));
  }
  validate(out);
  return out;
}

}  // namespace treefarm::lp

namespace treefarm::lp {

void set_result_bytes(PlatformModel& model, const model::Experiment& experiment, const model::Calibration& calibration) {
  for (std::size_t k = 0; k < model.apps.size() && k < experiment.apps.size(); ++k) {
    if (!experiment.apps[k].send_output) continue;
    double sum = 0.0;
    int count = 0;
    for (const auto& [name, nc] : calibration.nodes)
      if (const auto it = nc.output_bytes.find(model.apps[k].name); it != nc.output_bytes.end()) {
        sum += it->second;
        ++count;
      }
    if (count > 0) model.apps[k].result_bytes = sum / count;
  }
}

namespace {

/// Twins: nodes of one host that compute on the same CPUs with the same cores and share
/// run the same kernels on the same hardware, so their measured task times differ only by
/// the calibration's noise. Each twin takes the mean of the group's, per application, so
/// that the LP's optimum does not turn on that noise: on the quickstart (four 1-core
/// workers sharing both CPUs) a few % between w1's and w2's times made the plan give one
/// of them every task while the other idled, a plan unlike the calibration's whole-task
/// run (the two computing at once) that then measured 4-11 % off its prediction.
void pool_twin_task_times(PlatformModel& model) {
  const std::size_t n = model.nodes.size();
  std::vector<char> done(n, 0);
  for (std::size_t u = 0; u < n; ++u) {
    const auto& a = model.nodes[u];
    if (done[u] || a.host < 0 || a.cpus.empty() || a.cores == 0) continue;
    std::vector<std::size_t> group;
    for (std::size_t v = u; v < n; ++v) {
      const auto& b = model.nodes[v];
      if (done[v] || b.host != a.host || b.cpus != a.cpus || b.cores != a.cores || b.cpu_share != a.cpu_share) continue;
      group.push_back(v);
      done[v] = 1;
    }
    if (group.size() < 2) continue;
    for (std::size_t k = 0; k < model.apps.size(); ++k) {
      double sum = 0;
      std::size_t measured = 0;
      for (const auto v : group) {
        const double t = model.nodes[v].task_seconds[k];
        if (std::isfinite(t) && t > 0) sum += t, ++measured;
      }
      if (measured == 0) continue;
      for (const auto v : group) {
        double& t = model.nodes[v].task_seconds[k];
        if (std::isfinite(t) && t > 0) t = sum / static_cast<double>(measured);
      }
    }
  }
}

}  // namespace

PlatformModel model_from_calibration(model::Experiment experiment, const model::Calibration& calibration,
                                     bool same_host_links_bind) {
  MeasuredSeconds seconds;
  MeasuredBandwidth bandwidth;
  for (const auto& [name, nc] : calibration.nodes) {
    seconds[name] = nc.task_seconds;
    if (nc.link_bandwidth && *nc.link_bandwidth > 0) bandwidth[name] = *nc.link_bandwidth;
  }
  for (auto& node : experiment.nodes) {
    const auto it = calibration.nodes.find(node.name);
    if (it != calibration.nodes.end() && it->second.cores > 0) node.cores = it->second.cores;
  }
  auto model = model_from_experiment(experiment, &seconds, &bandwidth);
  set_result_bytes(model, experiment, calibration);
  std::map<std::string, int> host_index;
  for (const auto& [name, h] : calibration.hosts) {
    host_index[name] = static_cast<int>(model.hosts.size());
    model.hosts.push_back(PlatformModel::Host{name, h.cores, h.comm_cpu_seconds_per_byte, h.input_cpu_seconds_per_byte,
                                              h.receive_cpu_seconds_per_byte, {}, h.busy_share, h.shared_inputs});
    if (h.task_cpu_seconds.empty()) continue;
    auto& per_app = model.hosts.back().task_cpu_seconds;
    per_app.assign(model.apps.size(), 0.0);
    for (std::size_t k = 0; k < model.apps.size(); ++k)
      if (const auto it = h.task_cpu_seconds.find(model.apps[k].name); it != h.task_cpu_seconds.end()) per_app[k] = it->second;
  }
  for (std::size_t i = 0; i < model.nodes.size(); ++i) {
    const auto it = calibration.nodes.find(model.nodes[i].name);
    if (it == calibration.nodes.end()) continue;
    const auto& nc = it->second;
    if (nc.out_bandwidth && *nc.out_bandwidth > 0)
      model.nodes[i].max_out_bandwidth = std::min(model.nodes[i].max_out_bandwidth, *nc.out_bandwidth);
    if (!nc.host.empty()) {
      const auto h = host_index.find(nc.host);
      if (h == host_index.end())
        node_error(model.nodes[i].name, "host", "'" + nc.host + "' is not one of the calibration's hosts");
      model.nodes[i].host = h->second;
    }
    model.nodes[i].cpu_share = nc.cpu_share;
    if (nc.link_round_trip && i > 0) {
      model.nodes[i].request_round_trip = *nc.link_round_trip;
      model.nodes[i].port_hold = *nc.link_round_trip;
    }
    model.one_port_window = experiment.run.one_port_window;  // the ZeroMQ adapter's (NodeOptions)
    model.nodes[i].cpus = nc.cpus;
  }
  // A link within a host whose tasks' whole CPU cost was measured through the runtime
  // (task_cpu_seconds): the move's CPU is in that cost and the host row charges it; on
  // loopback the CPU is all a link is (its probe only saw the share of the CPU the other
  // nodes, measuring at once, left it). Unconstrained, at both ends of the interval.
  for (std::size_t v = 1; v < model.nodes.size(); ++v) {
    auto& n = model.nodes[v];
    if (n.parent < 0 || n.host < 0 || model.nodes[static_cast<std::size_t>(n.parent)].host != n.host) continue;
    if (model.hosts[static_cast<std::size_t>(n.host)].task_cpu_seconds.empty()) continue;
    n.link_bandwidth = std::numeric_limits<double>::infinity();
  }
  if (!same_host_links_bind) {
    // A link within one host: its probe rounds are slowed by everything else the host's
    // CPUs do, which the host row charges already; the link's own limit is its fastest
    // round (none resolved: unconstrained). Likewise a node's measured aggregate output
    // (the fan-out probe) when all its children are on its host: those sends cost the
    // host's CPU, which the host row charges (γ per byte moved, measured alone, and the
    // runtime's own per-byte costs at the ends); the probe, run while every node of the
    // host measures at once, only saw a share of that CPU (on the quickstart it
    // moved 1.3–2.1 GB/s from one calibration to the next and bound the prediction).
    for (std::size_t u = 0; u < model.nodes.size(); ++u) {
      const int host = model.nodes[u].host;
      if (host < 0 || std::isinf(model.nodes[u].max_out_bandwidth)) continue;
      bool all_here = true, any = false;
      for (std::size_t v = 1; v < model.nodes.size(); ++v)
        if (model.nodes[v].parent == static_cast<int>(u)) {
          any = true;
          all_here = all_here && model.nodes[v].host == host;
        }
      if (any && all_here)  // the run's declared cap, if any, stays
        model.nodes[u].max_out_bandwidth = experiment.run.max_out_bandwidth.value_or(std::numeric_limits<double>::infinity());
    }
    for (std::size_t v = 1; v < model.nodes.size(); ++v) {
      auto& n = model.nodes[v];
      if (n.parent < 0 || n.host < 0 || model.nodes[static_cast<std::size_t>(n.parent)].host != n.host) continue;
      const auto it = calibration.nodes.find(n.name);
      if (it == calibration.nodes.end() || !it->second.link_bandwidth) continue;  // not measured / unconstrained
      n.link_bandwidth = it->second.link_bandwidth_max ? std::max(*it->second.link_bandwidth_max, n.link_bandwidth)
                                                       : std::numeric_limits<double>::infinity();
    }
  }
  pool_twin_task_times(model);
  validate(model);
  return model;
}

double host_cpu_per_task(const PlatformModel& m, std::size_t h, std::size_t u, std::size_t k) {
  const auto& host = m.hosts[h];
  const auto& app = m.apps[k];
  double cpu = 0.0;
  // The whole cost of such a task, measured through the runtime one hop from its origin
  // (task_cpu_seconds): less the one move the link terms charge (γ·(b + result), both
  // ends on h), never below the kernel itself.
  const bool here = m.nodes[u].host == static_cast<int>(h);
  if (here && u != app.origin && k < host.task_cpu_seconds.size() && host.task_cpu_seconds[k] > 0.0) {
    const double kernel = m.nodes[u].task_seconds[k] * m.nodes[u].cpu_share * app.cores_per_task;
    // Less what the link term charges h for the hop from u's parent: the whole move when
    // both ends are on h (a tree on one machine, measured one hop from the origin), the
    // node's half when the parent is elsewhere (an emulated LAN, measured at the node
    // alone: tools/HostCalibration.hpp calibrate_emulated_hosts).
    const auto parent = m.nodes[u].parent;
    const double hop = parent >= 0 && m.nodes[static_cast<std::size_t>(parent)].host == static_cast<int>(h) ? 1.0 : 0.5;
    // The move measured inside it is a hop from the origin.
    return std::max(kernel, host.task_cpu_seconds[k] - hop * host.comm_cpu_seconds_per_byte * origin_hop_bytes(host, app));
  }
  if (here) {
    cpu += m.nodes[u].task_seconds[k] * m.nodes[u].cpu_share * app.cores_per_task;
    if (u != app.origin) cpu += host.receive_cpu_seconds_per_byte * app.bytes;
  }
  if (m.nodes[app.origin].host == static_cast<int>(h)) cpu += host.input_cpu_seconds_per_byte * app.bytes;
  return cpu;
}

double origin_hop_bytes(const PlatformModel::Host& host, const PlatformModel::App& app) {
  return host.shared_inputs ? app.result_bytes : app.bytes + app.result_bytes;
}

double hop_bytes(const PlatformModel& m, const PlatformModel::Host& host, std::size_t a, std::size_t b, std::size_t k) {
  const auto& app = m.apps[k];
  return a == app.origin || b == app.origin ? origin_hop_bytes(host, app) : app.bytes + app.result_bytes;
}

double own_host_cpu_per_task(const PlatformModel& m, std::size_t u, std::size_t k) {
  const auto& node = m.nodes[u];
  const auto& app = m.apps[k];
  if (node.host < 0) return node.task_seconds[k] * node.cpu_share * app.cores_per_task;
  const auto h = static_cast<std::size_t>(node.host);
  double cpu = host_cpu_per_task(m, h, u, k);
  // The hops from the origin down to u, each charged to h for the ends it has there.
  for (std::size_t x = u; x != app.origin;) {
    const int y = m.upstream(x, k);
    if (y < 0) break;
    const int ends = (m.nodes[x].host == node.host ? 1 : 0) + (m.nodes[static_cast<std::size_t>(y)].host == node.host ? 1 : 0);
    cpu += m.hosts[h].comm_cpu_seconds_per_byte * hop_bytes(m, m.hosts[h], x, static_cast<std::size_t>(y), k) * ends / 2.0;
    x = static_cast<std::size_t>(y);
  }
  return cpu;
}

}  // namespace treefarm::lp
