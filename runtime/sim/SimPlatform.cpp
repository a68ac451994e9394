#include "runtime/sim/SimPlatform.hpp"

#include <cmath>
#include <algorithm>
#include <deque>
#include <map>
#include <utility>
#include <stdexcept>

namespace treefarm::sim {

namespace {

/// Hosts (docs/simulation.md, "Calibration"): on a calibrated host — nodes sharing one
/// machine, or an emulated node under its CPU quota — a task costs the host more than its
/// kernel: its input's reception, its generation where the origin shares the host, the
/// moves on its way (γ per byte), or its whole cost measured through the runtime. The LP's
/// host row charges all of it to the host's CPUs (lp::own_host_cpu_per_task is a node's
/// share), and its CPU-set rows charge the nodes pinned to one set to that set. So the
/// computing nodes of a host (one group per CPU set when the host has several) run on one
/// CPU pool, whose cores together give the group's CPUs (each thread at most one full
/// CPU), and a task's CPU is spent there in two parts: while it travels to a node, that
/// node's end of the move (and the sender's half when the sender is on another host); at
/// a node that forwards none of them, also everything beyond the kernel (a real node
/// spends it receiving, beside the task it runs, so a large task does not leave it idle
/// for its transfer and then for its reception again); the rest when it runs. In all, per
/// task, exactly what the LP charges.
void assign_cpu_pools(SimPlatform& p) {
  const auto& m = p.model;
  const std::size_t n = p.nodes.size(), kk = p.experiment.apps.size();
  std::map<std::pair<int, std::vector<int>>, std::vector<std::size_t>> groups;
  std::map<int, int> groups_per_host;
  for (std::size_t u = 0; u < n; ++u) {
    const auto& node = m.nodes[u];
    if (node.host < 0 || node.cores == 0) continue;
    auto& members = groups[{node.host, node.cpus}];
    if (members.empty()) ++groups_per_host[node.host];
    members.push_back(u);
  }
  for (const auto& [key, members] : groups) {
    const auto& [h, cpus] = key;
    const auto& host = m.hosts[static_cast<std::size_t>(h)];
    // The group's CPUs: the host's when the group is all of it (or its nodes are not
    // pinned), else its CPU set's (never more than the host's).
    const double cpu = groups_per_host[h] == 1 || cpus.empty() ? host.cores
                                                                : std::min(host.cores, static_cast<double>(cpus.size()));
    CpuPool pool;
    pool.name = "cpu-" + host.name;
    for (const int c : cpus) pool.name += "-" + std::to_string(c);
    pool.cores = static_cast<std::uint32_t>(std::max(1.0, std::ceil(cpu - 1e-9)));
    pool.speed = reference_speed * cpu / pool.cores;
    for (const std::size_t u : members) {
      p.nodes[u].cpu_pool = static_cast<int>(p.cpu_pools.size());
      // A speed or quota event of the node scales the pool it runs on (the pool of an
      // emulated node is its own; nodes sharing a machine rarely change speed alone).
      for (const auto& [at, v] : p.nodes[u].speed_changes) pool.speed_changes.emplace_back(at, pool.speed * v / p.nodes[u].speed);
    }
    std::stable_sort(pool.speed_changes.begin(), pool.speed_changes.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    p.cpu_pools.push_back(std::move(pool));
  }
  // forwards[u][k]: some node receives k's tasks from u.
  std::vector<std::vector<char>> forwards(n, std::vector<char>(kk, 0));
  for (std::size_t v = 0; v < n; ++v)
    for (std::size_t k = 0; k < kk; ++k)
      if (const int up = m.upstream(v, k); up >= 0) forwards[static_cast<std::size_t>(up)][k] = 1;
  for (std::size_t v = 0; v < n; ++v) {
    SimNode& s = p.nodes[v];
    for (std::size_t k = 0; k < kk; ++k) {
      const auto& app = m.apps[k];
      const int h = m.nodes[v].host;
      if (s.cpu_pool >= 0 && s.work[k] > 0) {
        const double kernel = m.nodes[v].task_seconds[k] * m.nodes[v].cpu_share * app.cores_per_task;
        const double here = lp::host_cpu_per_task(m, static_cast<std::size_t>(h), v, k);
        const double run = forwards[v][k] ? here : kernel;  // CPU seconds, all its threads
        s.work[k] = run / app.cores_per_task * reference_speed;
        s.task_seconds[k] = s.work[k] / p.cpu_pools[static_cast<std::size_t>(s.cpu_pool)].speed;
        s.receive_work[k] += (here - run) * reference_speed;
      }
      // The move into v: each host pays for the ends it has (γ per byte, docs/lp.md).
      const int up = m.upstream(v, k);
      if (up < 0) continue;
      const SimNode& sender = p.nodes[static_cast<std::size_t>(up)];
      const int h_up = m.nodes[static_cast<std::size_t>(up)].host;
      if (h >= 0 && s.cpu_pool >= 0) {
        // Both ends on v's host: the whole move there (on v's pool, the sender's too when
        // the sender has no pool of its own: a master computes nothing).
        const bool both = h_up == h;
        const auto& host = m.hosts[static_cast<std::size_t>(h)];
        s.receive_work[k] += host.comm_cpu_seconds_per_byte * lp::hop_bytes(m, host, v, static_cast<std::size_t>(up), k) * (both ? 1.0 : 0.5) * reference_speed;
      }
      if (h_up >= 0 && h_up != h && sender.cpu_pool >= 0)
        s.send_work[k] += m.hosts[static_cast<std::size_t>(h_up)].comm_cpu_seconds_per_byte *
                          lp::hop_bytes(m, m.hosts[static_cast<std::size_t>(h_up)], v, static_cast<std::size_t>(up), k) * 0.5 * reference_speed;
    }
  }
}

}  // namespace

SimPlatform make_sim_platform(const model::Experiment& experiment, const model::Calibration* calibration) {
  SimPlatform p;
  p.experiment = experiment;
  if (calibration) {
    // The calibrated platform as the master predicts it: the same LP model,
    // hosts included, so that `simulate --calibration` and `predict --calibration` agree;
    // only its latency terms are the simulator's, as model_from_experiment sets them (a
    // transfer holds the port for the declared latency; no ZeroMQ window).
    p.model = lp::model_from_calibration(experiment, *calibration);
    p.model.one_port_window = 0;
    for (std::size_t u = 1; u < p.model.nodes.size(); ++u) {
      p.model.nodes[u].request_round_trip = 2 * experiment.nodes[u].latency;
      p.model.nodes[u].port_hold = experiment.nodes[u].latency;
    }
    p.calibrated = true;
  } else {
    p.model = lp::model_from_experiment(experiment);
  }
  for (const auto& app : p.model.apps) p.result_bytes.push_back(app.result_bytes);

  const std::size_t n = experiment.nodes.size();
  p.nodes.resize(n);
  for (std::size_t u = 0; u < n; ++u) {
    const auto& spec = experiment.nodes[u];
    const auto& m = p.model.nodes[u];
    SimNode& s = p.nodes[u];
    s.name = spec.name;
    s.parent = m.parent;
    if (m.parent >= 0) p.nodes[static_cast<std::size_t>(m.parent)].children.push_back(u);
    s.cores = m.cores;  // as the node advertised it when calibrated (the LP's), else declared
    s.speed = spec.speed.value_or(reference_speed);
    s.bandwidth = std::isfinite(m.link_bandwidth) ? m.link_bandwidth : unbounded_bandwidth;
    s.latency = spec.latency;
    s.max_out_bandwidth = std::isfinite(m.max_out_bandwidth) ? m.max_out_bandwidth : 0.0;
    s.task_seconds = m.task_seconds;
    s.work.assign(experiment.apps.size(), 0.0);
    s.receive_work.assign(experiment.apps.size(), 0.0);
    s.send_work.assign(experiment.apps.size(), 0.0);
    for (std::size_t k = 0; k < experiment.apps.size(); ++k) {
      if (!p.model.can_run(u, k)) continue;
      // SimGrid 3.32 runs an execution of `work` flop with thread_count = cores_per_task
      // as cores_per_task threads of `work` flop each, so it lasts work / speed: work =
      // task_seconds × speed, calibrated or not. Without a calibration the threads
      // together do exactly the task's flop (task_seconds = flops / (cpt · speed)).
      s.work[k] = s.task_seconds[k] * s.speed;
    }
  }
  // `[[event]]`s (docs/migration.md): speed and link changes during the run. The
  // experiment keeps them sorted by time; each is absolute, so they apply in order.
  for (const auto& e : experiment.events) {
    const auto u = experiment.node_index(e.node);
    if (!u) throw std::invalid_argument("event at " + std::to_string(e.at) + " s: no node called '" + e.node + "'");
    const auto& spec = experiment.nodes[*u];
    SimNode& s = p.nodes[*u];
    switch (e.kind) {
      case model::EventKind::speed:
        if (!spec.speed)
          throw std::invalid_argument("event at " + std::to_string(e.at) + " s: node '" + e.node +
                                      "' has no speed to change (its durations come from a calibration); use cpu_quota");
        s.speed_changes.emplace_back(e.at, e.value);
        break;
      case model::EventKind::cpu_quota:
        // The node's speed was measured or given at its initial quota (1 core if none).
        s.speed_changes.emplace_back(e.at, s.speed * e.value / spec.cpu_quota.value_or(1.0));
        break;
      case model::EventKind::bandwidth:
        if (spec.parent) s.bandwidth_changes.emplace_back(e.at, e.value);
        break;
    }
  }
  if (calibration && n > 1) assign_cpu_pools(p);
  return p;
}

std::vector<OriginTree> origin_trees(const SimPlatform& platform) {
  const std::size_t n = platform.nodes.size();
  std::vector<OriginTree> trees;
  for (std::size_t k = 0; k < platform.experiment.apps.size(); ++k) {
    const std::string& name = platform.experiment.apps[k].origin;
    std::size_t origin = 0;
    if (!name.empty()) {
      const auto u = platform.experiment.node_index(name);
      if (!u) throw std::invalid_argument("app '" + platform.experiment.apps[k].name + "': no node called '" + name + "'");
      origin = *u;
    }
    auto it = std::find_if(trees.begin(), trees.end(), [&](const OriginTree& t) { return t.origin == origin; });
    if (it == trees.end()) it = trees.insert(trees.end(), OriginTree{origin, {}, {}});
    it->apps.push_back(k);
  }
  for (auto& t : trees) {
    SimPlatform& v = t.view;
    v.experiment = platform.experiment;
    v.experiment.apps.clear();
    v.result_bytes.clear();
    for (std::size_t k : t.apps) {
      v.experiment.apps.push_back(platform.experiment.apps[k]);
      v.experiment.apps.back().origin.clear();
      v.result_bytes.push_back(k < platform.result_bytes.size() ? platform.result_bytes[k] : 0.0);
    }
    v.calibrated = platform.calibrated;
    v.nodes = platform.nodes;
    v.cpu_pools = platform.cpu_pools;
    for (std::size_t u = 0; u < n; ++u) {
      SimNode& node = v.nodes[u];
      node.parent = -1;
      node.children.clear();
      node.work.clear();
      node.task_seconds.clear();
      node.receive_work.clear();
      node.send_work.clear();
      for (std::size_t k : t.apps) {
        node.work.push_back(platform.nodes[u].work.at(k));
        node.task_seconds.push_back(platform.nodes[u].task_seconds.at(k));
        node.receive_work.push_back(platform.nodes[u].receive_work.at(k));
        node.send_work.push_back(platform.nodes[u].send_work.at(k));
      }
    }
    // Breadth-first from the origin over the physical edges; a node's children in the view
    // are its physical children, then its physical parent when that is not its view parent
    // (so the view from the root is the platform itself).
    std::vector<bool> seen(n, false);
    std::deque<std::size_t> queue{t.origin};
    seen[t.origin] = true;
    while (!queue.empty()) {
      const std::size_t u = queue.front();
      queue.pop_front();
      std::vector<std::size_t> next = platform.nodes[u].children;
      if (platform.nodes[u].parent >= 0) next.push_back(static_cast<std::size_t>(platform.nodes[u].parent));
      for (std::size_t w : next) {
        if (seen[w]) continue;
        seen[w] = true;
        v.nodes[w].parent = static_cast<int>(u);
        v.nodes[u].children.push_back(w);
        // The link between u and w is w's uplink when w is u's child, else u's own.
        const SimNode& link = platform.nodes[w].parent == static_cast<int>(u) ? platform.nodes[w] : platform.nodes[u];
        v.nodes[w].bandwidth = link.bandwidth;
        v.nodes[w].latency = link.latency;
        v.nodes[w].bandwidth_changes = link.bandwidth_changes;
        queue.push_back(w);
      }
    }
    if (t.origin != 0) {  // the view's root has no uplink: as the physical root
      v.nodes[t.origin].bandwidth = platform.nodes[0].bandwidth;
      v.nodes[t.origin].latency = platform.nodes[0].latency;
      v.nodes[t.origin].bandwidth_changes.clear();
    }
  }
  return trees;
}

}  // namespace treefarm::sim
