#include "runtime/plan/Qlse.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace treefarm::plan {

namespace {

constexpr double slack = 1e-9;  // relative tolerance on capacities

/// Residual capacities of the grid (slide 11): host power (one task per host: a host is
/// free or taken), each LAN's internal bandwidth and each inter-LAN link's bandwidth.
struct Residual {
  std::vector<bool> free;
  std::vector<double> lan;
  std::vector<std::vector<double>> link;
  explicit Residual(const MachineSet& s)
      : free(s.machines.size(), true), lan(s.lans.size()), link(s.lan_bandwidth) {
    for (std::size_t a = 0; a < s.lans.size(); ++a) lan[a] = s.lans[a].bandwidth;
  }
  double& edge(std::size_t a, std::size_t b) { return a == b ? lan[a] : link[a][b]; }
};

void fill_metrics(const MachineSet& s, Mapping& m) {
  const auto& g = m.graph;
  double total = 0, inside = 0, ratio = 0;
  for (std::size_t i = 0; i < g.parent.size(); ++i) {
    ratio += s.machines[m.host[i]].power() / g.mcr;
    if (g.parent[i] < 0) continue;
    total += g.mbr[i];
    if (s.machines[m.host[i]].lan == s.machines[m.host[static_cast<std::size_t>(g.parent[i])]].lan) inside += g.mbr[i];
  }
  m.lan_hit_ratio = total > 0 ? inside / total : 1.0;
  m.computational_ratio = g.parent.empty() ? 0.0 : ratio / static_cast<double>(g.parent.size());
}

void fill_tree(const MachineSet& s, Mapping& m) {
  m.tree.parent.assign(s.machines.size(), PlanTree::unused_mark);
  for (std::size_t i = 0; i < m.graph.parent.size(); ++i) {
    const int p = m.graph.parent[i];
    m.tree.parent[m.host[i]] = p < 0 ? PlanTree::root_mark : static_cast<int>(m.host[static_cast<std::size_t>(p)]);
  }
}

/// Connected components of the LAN graph restricted to links of at least `threshold`
/// bytes/s (slide 9).
std::vector<std::vector<std::size_t>> clusters(const MachineSet& s, double threshold) {
  const std::size_t l = s.lans.size();
  std::vector<int> comp(l, -1);
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t a = 0; a < l; ++a) {
    if (comp[a] >= 0) continue;
    comp[a] = static_cast<int>(out.size());
    out.push_back({a});
    for (std::size_t h = 0; h < out.back().size(); ++h) {
      const std::size_t u = out.back()[h];
      for (std::size_t v = 0; v < l; ++v)
        if (v != u && comp[v] < 0 && s.lan_bandwidth[u][v] >= threshold) {
          comp[v] = comp[a];
          out.back().push_back(v);
        }
    }
  }
  return out;
}

}  // namespace

TaskGraph build_task_graph(const MachineSet& s, const std::vector<model::AppSpec>& apps,
                           const std::vector<double>& rates, const QlseOptions& o) {
  if (rates.size() != apps.size()) throw std::invalid_argument("qlse: one rate per application expected");
  if (o.fan_out < 1) throw std::invalid_argument("qlse: fan_out must be >= 1");
  TaskGraph g;
  for (std::size_t k = 0; k < apps.size(); ++k) {
    if (!(rates[k] >= 0)) throw std::invalid_argument("qlse: rates must be >= 0 tasks/s");
    g.computational_request += rates[k] * apps[k].task_flops();
    g.bandwidth_request += rates[k] * static_cast<double>(apps[k].input_bytes());
  }
  std::vector<double> power;
  for (const auto& m : s.machines) power.push_back(m.power());
  std::sort(power.begin(), power.end(), std::greater<>());
  std::size_t n = 0;
  for (std::size_t c = 1; c <= power.size(); ++c)
    if (power[c - 1] * (1 + slack) >= g.computational_request / static_cast<double>(c)) {
      n = c;
      break;
    }
  if (n == 0) return g;
  g.mcr = g.computational_request / static_cast<double>(n);
  g.parent.assign(n, -1);
  for (std::size_t i = 1; i < n; ++i) g.parent[i] = static_cast<int>((i - 1) / o.fan_out);
  std::vector<double> size(n, 1.0);
  for (std::size_t i = n; i-- > 1;) size[static_cast<std::size_t>(g.parent[i])] += size[i];
  g.mbr.assign(n, 0.0);
  for (std::size_t i = 1; i < n; ++i) g.mbr[i] = g.bandwidth_request * size[i] / static_cast<double>(n);
  return g;
}

namespace {

/// QLSE (papers/lee2010 slide 7): the placement of a non-empty task graph `out.graph`.
void place_qlse(const MachineSet& s, const QlseOptions& o, Mapping& out) {
  const auto& g = out.graph;
  const std::size_t n = g.parent.size();
  const double d = g.computational_request > 0 ? g.computational_request : 1.0;
  const double b = g.bandwidth_request > 0 ? g.bandwidth_request : 1.0;

  // Slide 7 (1): priority_i = MCR_i + Σ_{j adjacent} (MBR_ij + share·MCR_j), each term
  // normalised by the total request so flop/s and bytes/s can be added.
  std::vector<std::vector<std::size_t>> adj(n);
  std::vector<double> edge_mbr(n, 0.0);
  for (std::size_t i = 1; i < n; ++i) {
    const auto p = static_cast<std::size_t>(g.parent[i]);
    adj[i].push_back(p);
    adj[p].push_back(i);
  }
  std::vector<double> priority(n);
  for (std::size_t i = 0; i < n; ++i) {
    priority[i] = g.mcr / d;
    for (std::size_t j : adj[i]) {
      const double mbr = g.parent[j] == static_cast<int>(i) ? g.mbr[j] : g.mbr[i];
      priority[i] += mbr / b + o.neighbour_share * g.mcr / d;
    }
  }
  // Slide 7 (2)-(3), slide 8: the task hierarchical graph rooted at the highest priority
  // task, levels breadth-first, within a level by communicating tasks then priority. The
  // task graph is a tree: no cycle to collapse. thg_parent is the neighbour one level up.
  const std::size_t top = static_cast<std::size_t>(std::max_element(priority.begin(), priority.end()) - priority.begin());
  std::vector<std::size_t> tal{top};
  std::vector<int> thg_parent(n, -2);
  thg_parent[top] = -1;
  for (std::size_t begin = 0; begin < tal.size();) {
    const std::size_t end = tal.size();
    for (std::size_t h = begin; h < end; ++h)
      for (std::size_t j : adj[tal[h]])
        if (thg_parent[j] == -2) {
          thg_parent[j] = static_cast<int>(tal[h]);
          tal.push_back(j);
        }
    std::stable_sort(tal.begin() + static_cast<std::ptrdiff_t>(end), tal.end(), [&](std::size_t x, std::size_t y) {
      if (adj[x].size() != adj[y].size()) return adj[x].size() > adj[y].size();
      return priority[x] > priority[y];
    });
    begin = end;
  }
  // MBR of the THG edge into each task (the same edge of the tree, possibly reversed).
  for (std::size_t i = 0; i < n; ++i) {
    if (thg_parent[i] < 0) continue;
    const auto p = static_cast<std::size_t>(thg_parent[i]);
    edge_mbr[i] = g.parent[i] == static_cast<int>(p) ? g.mbr[i] : g.mbr[p];
  }

  // Slide 9: thresholds = quartiles of the inter-LAN bandwidth distribution, decreasing;
  // the last (the minimum) joins every LAN into one cluster.
  std::vector<double> bws;
  for (std::size_t a = 0; a < s.lans.size(); ++a)
    for (std::size_t c = a + 1; c < s.lans.size(); ++c) bws.push_back(s.lan_bandwidth[a][c]);
  std::vector<double> thresholds;
  if (bws.empty()) thresholds.push_back(0.0);
  else {
    std::sort(bws.begin(), bws.end());
    for (double q : {0.75, 0.5, 0.25, 0.0}) {
      const double t = bws[static_cast<std::size_t>(q * static_cast<double>(bws.size() - 1) + 0.5)];
      if (thresholds.empty() || t < thresholds.back()) thresholds.push_back(t);
    }
    if (thresholds.back() > bws.front()) thresholds.push_back(bws.front());
  }

  std::vector<double> lan_power(s.lans.size(), 0.0);
  for (const auto& m : s.machines) lan_power[m.lan] += m.power();
  const double max_power = *std::max_element(lan_power.begin(), lan_power.end());
  const double max_bw = bws.empty() ? 1.0 : bws.back();

  for (std::size_t q = 0; q < thresholds.size(); ++q) {
    auto cal = clusters(s, thresholds[q]);
    // Slide 10: LAN priority = its power + the bandwidth of its links inside the cluster
    // + share · the power of the LANs it links to (normalised like the task priorities).
    std::vector<double> lan_priority(s.lans.size(), 0.0);
    for (const auto& c : cal)
      for (std::size_t a : c) {
        lan_priority[a] = lan_power[a] / max_power;
        for (std::size_t x : c)
          if (x != a && s.lan_bandwidth[a][x] >= thresholds[q])
            lan_priority[a] += s.lan_bandwidth[a][x] / max_bw + o.neighbour_share * lan_power[x] / max_power;
      }
    for (auto& c : cal)
      std::stable_sort(c.begin(), c.end(), [&](std::size_t x, std::size_t y) { return lan_priority[x] > lan_priority[y]; });
    auto rank = [&](const std::vector<std::size_t>& c) {
      double r = 0;
      for (std::size_t a : c) r += lan_priority[a];
      return r;
    };
    std::stable_sort(cal.begin(), cal.end(), [&](const auto& x, const auto& y) { return rank(x) > rank(y); });

    for (const auto& cluster : cal) {
      Residual res(s);
      std::vector<std::size_t> host(n, s.machines.size());
      bool ok = true;
      for (std::size_t t : tal) {
        const int p = thg_parent[t];
        const std::size_t parent_lan = p >= 0 ? s.machines[host[static_cast<std::size_t>(p)]].lan : 0;
        std::size_t chosen = s.machines.size();
        for (std::size_t lan : cluster) {  // slide 11: the first suitable LAN
          if (p >= 0 && res.edge(parent_lan, lan) * (1 + slack) < edge_mbr[t]) continue;
          for (std::size_t h = 0; h < s.machines.size(); ++h) {  // best fit inside the LAN
            const auto& m = s.machines[h];
            if (m.lan != lan || !res.free[h] || m.power() * (1 + slack) < g.mcr) continue;
            if (chosen == s.machines.size() || m.power() < s.machines[chosen].power()) chosen = h;
          }
          if (chosen != s.machines.size()) break;
        }
        if (chosen == s.machines.size()) {
          ok = false;
          break;
        }
        host[t] = chosen;
        res.free[chosen] = false;
        if (p >= 0) res.edge(parent_lan, s.machines[chosen].lan) -= edge_mbr[t];
      }
      if (!ok) continue;
      // The THG may be rooted elsewhere than task 0: the machine tree follows the THG.
      out.found = true;
      out.threshold = static_cast<int>(q);
      out.host = host;
      out.graph.parent = thg_parent;
      out.graph.mbr = edge_mbr;
      fill_tree(s, out);
      fill_metrics(s, out);
      return;
    }
  }
}

/// Greedy best fit (the baseline of papers/lee2010): tasks in tree order, each on the free
/// host with the least power above the MCR.
void place_greedy(const MachineSet& s, Mapping& out) {
  const auto& g = out.graph;
  const std::size_t n = g.parent.size();
  // LANs by aggregate power, hosts of a LAN by power: the scan order; best fit picks the
  // free host with the least power above the MCR, the first in scan order on ties.
  std::vector<double> lan_power(s.lans.size(), 0.0);
  for (const auto& m : s.machines) lan_power[m.lan] += m.power();
  std::vector<std::size_t> scan(s.machines.size());
  std::iota(scan.begin(), scan.end(), 0);
  std::stable_sort(scan.begin(), scan.end(), [&](std::size_t x, std::size_t y) {
    const auto &a = s.machines[x], &b = s.machines[y];
    if (a.lan != b.lan) return lan_power[a.lan] > lan_power[b.lan] || (lan_power[a.lan] == lan_power[b.lan] && a.lan < b.lan);
    return a.power() > b.power();
  });
  Residual res(s);
  out.host.assign(n, s.machines.size());
  for (std::size_t t = 0; t < n; ++t) {  // every MCR is the same: task order = tree order
    std::size_t chosen = s.machines.size();
    for (std::size_t h : scan) {
      const auto& m = s.machines[h];
      if (!res.free[h] || m.power() * (1 + slack) < g.mcr) continue;
      if (chosen == s.machines.size() || m.power() < s.machines[chosen].power()) chosen = h;
    }
    if (chosen == s.machines.size()) return;
    out.host[t] = chosen;
    res.free[chosen] = false;
  }
  bool bandwidth_ok = true;
  for (std::size_t t = 1; t < n; ++t) {
    const std::size_t a = s.machines[out.host[static_cast<std::size_t>(g.parent[t])]].lan, b = s.machines[out.host[t]].lan;
    res.edge(a, b) -= g.mbr[t];
  }
  for (std::size_t a = 0; a < s.lans.size(); ++a) {
    if (res.lan[a] < -slack * s.lans[a].bandwidth) bandwidth_ok = false;
    for (std::size_t b = 0; b < s.lans.size(); ++b)
      if (a != b && res.link[a][b] < -slack * s.lan_bandwidth[a][b]) bandwidth_ok = false;
  }
  out.found = bandwidth_ok;
  out.threshold = -1;
  fill_tree(s, out);
  fill_metrics(s, out);
}

/// The task graph of `apps` at `rates`, placed on `s` by `place` when it has a task.
Mapping map_with(const MachineSet& s, const std::vector<model::AppSpec>& apps, const std::vector<double>& rates,
                 const QlseOptions& o, const std::function<void(Mapping&)>& place) {
  Mapping out;
  out.graph = build_task_graph(s, apps, rates, o);
  if (!out.graph.parent.empty()) place(out);
  return out;
}

}  // namespace

Mapping qlse_map(const MachineSet& s, const std::vector<model::AppSpec>& apps, const std::vector<double>& rates,
                 const QlseOptions& o) {
  return map_with(s, apps, rates, o, [&](Mapping& out) { place_qlse(s, o, out); });
}

Mapping greedy_map(const MachineSet& s, const std::vector<model::AppSpec>& apps, const std::vector<double>& rates,
                   const QlseOptions& o) {
  return map_with(s, apps, rates, o, [&](Mapping& out) { place_greedy(s, out); });
}

}  // namespace treefarm::plan
