#include "runtime/plan/TreeSearch.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>

namespace treefarm::plan {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// The tree where machines a and b exchange places.
PlanTree swapped(const PlanTree& t, std::size_t a, std::size_t b) {
  auto sigma = [&](std::size_t x) { return x == a ? b : x == b ? a : x; };
  PlanTree out;
  out.parent.assign(t.parent.size(), PlanTree::unused_mark);
  for (std::size_t x = 0; x < t.parent.size(); ++x) {
    const int p = t.parent[x];
    out.parent[sigma(x)] = p < 0 ? p : static_cast<int>(sigma(static_cast<std::size_t>(p)));
  }
  return out;
}

PlanTree reparented(const PlanTree& t, std::size_t v, std::size_t u) {
  PlanTree out = t;
  out.parent[v] = static_cast<int>(u);
  return out;
}

bool better(double candidate, double incumbent) { return candidate > incumbent * (1.0 + 1e-9) + 1e-300; }

}  // namespace

std::vector<PlanTree> neighbours(const PlanTree& tree) {
  std::vector<PlanTree> out;
  const std::size_t n = tree.parent.size();
  for (std::size_t v = 0; v < n; ++v) {
    if (tree.parent[v] < 0) continue;
    for (std::size_t u = 0; u < n; ++u)
      if (u != v && tree.used(u) && static_cast<int>(u) != tree.parent[v] && !tree.in_subtree(u, v))
        out.push_back(reparented(tree, v, u));
  }
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      if (tree.used(a) && tree.used(b)) {
        auto t = swapped(tree, a, b);
        if (t.parent != tree.parent) out.push_back(std::move(t));  // two sibling leaves: same tree
      }
  return out;
}

PlanTree random_neighbour(const PlanTree& tree, std::mt19937_64& rng) {
  const std::size_t n = tree.parent.size();
  if (n < 2) return tree;
  std::uniform_int_distribution<std::size_t> pick(0, n - 1);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::size_t a = pick(rng), b = pick(rng);
    if (a == b || !tree.used(a) || !tree.used(b)) continue;
    if (rng() & 1) return swapped(tree, a, b);
    // re-parent a under b
    if (tree.parent[a] < 0 || tree.parent[a] == static_cast<int>(b) || tree.in_subtree(b, a)) continue;
    return reparented(tree, a, b);
  }
  return tree;
}

PlanTree lan_gateway_tree(const MachineSet& set) {
  const std::size_t n = set.machines.size(), l = set.lans.size();
  std::vector<double> lan_power(l, 0.0);
  std::vector<int> gateway(l, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& m = set.machines[i];
    lan_power[m.lan] += m.power();
    if (gateway[m.lan] < 0 || m.power() > set.machines[static_cast<std::size_t>(gateway[m.lan])].power())
      gateway[m.lan] = static_cast<int>(i);
  }
  const std::size_t home = static_cast<std::size_t>(std::max_element(lan_power.begin(), lan_power.end()) - lan_power.begin());
  const int root = gateway[home];
  PlanTree t;
  t.parent.assign(n, PlanTree::unused_mark);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t lan = set.machines[i].lan;
    if (static_cast<int>(i) == root) t.parent[i] = PlanTree::root_mark;
    else if (static_cast<int>(i) == gateway[lan] || lan == home) t.parent[i] = root;
    else t.parent[i] = gateway[lan];
  }
  return t;
}

SearchResult rmshc(TreeEvaluator& ev, const PlanTree& initial, const RmshcOptions& o) {
  const auto t0 = Clock::now();
  const std::size_t evals0 = ev.evaluations();
  std::mt19937_64 rng(o.seed);
  SearchResult best;
  best.tree = initial;
  best.fair_throughput = ev.fair_throughput(initial);
  best.trees_seen = 1;
  auto out_of_budget = [&] {
    return (o.max_evaluations > 0 && ev.evaluations() - evals0 >= o.max_evaluations) ||
           (o.max_seconds > 0 && since(t0) >= o.max_seconds);
  };
  for (std::size_t k = 0; k < o.starts && !out_of_budget(); ++k) {
    // wang2006 §3 step (2a): the k-th start point is 2^k random neighbour steps away.
    PlanTree current = initial;
    const std::size_t walk = std::size_t{1} << std::min<std::size_t>(k, 20);
    for (std::size_t s = 0; s < walk; ++s) current = random_neighbour(current, rng);
    double value = ev.fair_throughput(current);
    ++best.trees_seen;
    ++best.starts;
    // Step (2c): steepest ascent until no neighbour is better.
    // A large neighbourhood (~1.5·n² trees) is sampled, never built: max_neighbours
    // random moves per step; a step is declared a local optimum only after
    // `sample_patience` samples in a row found nothing better.
    const std::size_t n = current.parent.size();
    const bool sampled = (n - 1) * (n - 1) + n * (n - 1) / 2 > o.max_neighbours;
    std::size_t failed_samples = 0;
    bool stuck = false;
    while (!stuck && !out_of_budget()) {
      std::vector<PlanTree> all;
      if (sampled) {
        all.reserve(o.max_neighbours);
        for (std::size_t i = 0; i < o.max_neighbours; ++i) all.push_back(random_neighbour(current, rng));
      } else {
        all = neighbours(current);
      }
      std::size_t arg = all.size();
      double top = value;
      for (std::size_t i = 0; i < all.size() && !out_of_budget(); ++i) {
        const double v = ev.fair_throughput(all[i]);
        ++best.trees_seen;
        if (better(v, top)) {
          top = v;
          arg = i;
        }
      }
      if (arg == all.size()) {
        stuck = !out_of_budget() && (!sampled || ++failed_samples >= o.sample_patience);
      } else {
        current = std::move(all[arg]);
        value = top;
        failed_samples = 0;
      }
    }
    if (stuck) ++best.local_optima;
    if (better(value, best.fair_throughput)) {  // step (3): the best local solution
      best.fair_throughput = value;
      best.tree = current;
    }
  }
  best.budget_exhausted = out_of_budget();
  best.evaluations = ev.evaluations() - evals0;
  best.seconds = since(t0);
  return best;
}

SearchResult exhaustive(TreeEvaluator& ev, bool prune) {
  const auto t0 = Clock::now();
  const std::size_t n = ev.machines().machines.size();
  if (n > exhaustive_max_machines)
    throw std::invalid_argument("exhaustive search is limited to " + std::to_string(exhaustive_max_machines) +
                                " machines (n^(n-1) trees); this set has " + std::to_string(n));
  const std::size_t evals0 = ev.evaluations();
  SearchResult best;
  best.fair_throughput = -1.0;
  auto consider = [&](const PlanTree& t, const std::vector<std::size_t>& order) {
    // The bound relaxes the LP, so a tree whose bound is below the best cannot be better
    // (1e-7: the bound and the simplex round differently).
    if (prune && best.fair_throughput > 0 && ev.upper_bound(t, order) < best.fair_throughput * (1.0 - 1e-7)) {
      ++best.trees_pruned;
      return;
    }
    const double v = ev.fair_throughput_uncached(t);
    ++best.trees_seen;
    if (v > best.fair_throughput) {
      best.fair_throughput = v;
      best.tree = t;
    }
  };
  if (prune && n > 1) {
    // A good first incumbent makes the bound prune from the start.
    best.tree = lan_gateway_tree(ev.machines());
    best.fair_throughput = ev.fair_throughput_uncached(best.tree);
    ++best.trees_seen;
  }
  if (n == 1) {
    consider(PlanTree::star(1, 0), {0});
  } else {
    // Prüfer sequences of length n-2 enumerate the n^(n-2) labelled trees.
    std::vector<std::size_t> seq(n - 2, 0);
    std::vector<std::vector<std::size_t>> adj(n);
    std::vector<std::size_t> degree(n);
    PlanTree t;  // reused: no allocation per tree (2,097,152 of them for 8 machines)
    std::vector<std::size_t> queue;
    queue.reserve(n);
    while (true) {
      for (auto& a : adj) a.clear();
      std::fill(degree.begin(), degree.end(), 1);
      for (std::size_t s : seq) ++degree[s];
      for (std::size_t s : seq) {
        std::size_t leaf = 0;
        while (degree[leaf] != 1) ++leaf;
        adj[leaf].push_back(s);
        adj[s].push_back(leaf);
        --degree[leaf];
        --degree[s];
      }
      std::size_t u = n, v = n;
      for (std::size_t i = 0; i < n; ++i)
        if (degree[i] == 1) (u == n ? u : v) = i;
      adj[u].push_back(v);
      adj[v].push_back(u);
      for (std::size_t root = 0; root < n; ++root) {
        t.parent.assign(n, PlanTree::unused_mark);
        t.parent[root] = PlanTree::root_mark;
        queue.assign(1, root);  // ends as the tree's breadth-first order
        for (std::size_t h = 0; h < queue.size(); ++h)
          for (std::size_t w : adj[queue[h]])
            if (t.parent[w] == PlanTree::unused_mark && w != root) {
              t.parent[w] = static_cast<int>(queue[h]);
              queue.push_back(w);
            }
        consider(t, queue);
      }
      std::size_t pos = 0;
      while (pos < seq.size() && ++seq[pos] == n) seq[pos++] = 0;
      if (pos == seq.size()) break;
    }
  }
  best.evaluations = ev.evaluations() - evals0;
  best.seconds = since(t0);
  return best;
}

}  // namespace treefarm::plan
