#include "runtime/plan/ParentChooser.hpp"

#include <limits>
#include <map>
#include <random>
#include <stdexcept>

#include "runtime/lp/ClpSolver.hpp"
#include "runtime/lp/SteadyState.hpp"

namespace treefarm::plan {

lp::PlatformModel with_joiner(const lp::PlatformModel& live, const JoiningNode& joiner, std::size_t parent,
                              double bandwidth) {
  lp::PlatformModel m = live;
  lp::PlatformModel::Node n;
  n.name = joiner.name;
  n.parent = static_cast<int>(parent);
  n.cores = joiner.cores;
  n.link_bandwidth = bandwidth;
  n.task_seconds = joiner.task_seconds;
  n.max_out_bandwidth = std::numeric_limits<double>::infinity();
  m.nodes.push_back(std::move(n));
  return m;
}

ParentChoice choose_parent(const lp::PlatformModel& live, const JoiningNode& joiner, std::size_t entry,
                           const std::vector<ParentCandidate>& candidates, const ParentChoiceOptions& o) {
  const std::size_t n = live.nodes.size();
  if (candidates.empty()) throw std::invalid_argument("choose_parent: no candidate parent with a measured link");
  if (entry >= n) throw std::invalid_argument("choose_parent: entry node out of range");
  if (joiner.task_seconds.size() != live.apps.size())
    throw std::invalid_argument("choose_parent: the joiner needs one task duration per application");
  std::map<std::size_t, double> measured;
  for (const auto& c : candidates) {
    if (c.node >= n) throw std::invalid_argument("choose_parent: candidate node out of range");
    if (!(c.bandwidth > 0)) throw std::invalid_argument("choose_parent: candidate bandwidth must be > 0 bytes/s");
    measured[c.node] = c.bandwidth;
  }
  std::vector<std::vector<std::size_t>> adj(n);
  for (std::size_t u = 1; u < n; ++u)
    if (live.nodes[u].parent >= 0) {
      const auto p = static_cast<std::size_t>(live.nodes[u].parent);
      adj[u].push_back(p);
      adj[p].push_back(u);
    }
  ParentChoice out;
  lp::ClpSolver solver;
  std::map<std::size_t, double> cache;
  auto value = [&](std::size_t y) {
    const auto it = measured.find(y);
    if (it == measured.end()) return -1.0;  // cannot attach there
    if (auto c = cache.find(y); c != cache.end()) return c->second;
    ++out.evaluations;
    const double v = lp::solve(with_joiner(live, joiner, y, it->second), solver).fair_throughput;
    cache[y] = v;
    return v;
  };
  std::mt19937_64 rng(o.seed);
  double best = -1.0;
  for (std::size_t k = 0; k < std::max<std::size_t>(o.starts, 1); ++k) {
    std::size_t y = entry;  // wang2006 §3 (2a): 2^k random neighbour steps from the entry
    for (std::size_t s = 0; s < (std::size_t{1} << std::min<std::size_t>(k, 16)) && !adj[y].empty(); ++s)
      y = adj[y][std::uniform_int_distribution<std::size_t>(0, adj[y].size() - 1)(rng)];
    double v = value(y);
    while (true) {  // (2c): steepest ascent over the neighbours
      std::size_t next = y;
      double top = v;
      for (std::size_t z : adj[y])
        if (const double w = value(z); w > top * (1 + 1e-9) + 1e-300) {
          top = w;
          next = z;
        }
      if (next == y) break;
      y = next;
      v = top;
    }
    if (v < 0) continue;  // a climb that never reached a measured node
    out.local_optima.push_back(y);
    if (v > best) {  // (3): the best of S
      best = v;
      out.parent = y;
    }
  }
  if (best < 0) {  // no walk met a measured node: take the best measured one directly
    for (const auto& [node, bw] : measured)
      if (const double v = value(node); v > best) {
        best = v;
        out.parent = node;
      }
  }
  out.fair_throughput = best;
  return out;
}

}  // namespace treefarm::plan
