#include "runtime/plan/LiveTree.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>

#include "runtime/lp/ClpSolver.hpp"
#include "runtime/lp/SteadyState.hpp"

namespace treefarm::plan {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

LiveTree live_tree(const std::vector<net::msg::TreeInfo>& infos, const std::map<std::string, double>& measured,
                   double default_speed) {
  std::map<std::string, const net::msg::TreeInfo*> by_name;
  const net::msg::TreeInfo* root = nullptr;
  for (const auto& i : infos) {
    by_name[i.name] = &i;
    if (i.parent_endpoint.empty()) {
      if (root && root->name != i.name)
        throw std::invalid_argument("live tree: two roots ('" + root->name + "' and '" + i.name + "')");
      root = &i;
    }
  }
  if (!root) throw std::invalid_argument("live tree: the root (the master) was not reached");
  if (root->apps.empty()) throw std::invalid_argument("live tree: the root has no application yet");

  LiveTree t;
  auto& m = t.model;
  for (const auto& a : root->apps) {
    m.apps.push_back({a.name, static_cast<double>(a.bytes), a.weight, a.cores_per_task});
    t.flops.push_back(a.flops);
  }
  const std::size_t apps = m.apps.size();

  // Breadth-first from the root along the children lists; bandwidth 0 / seconds 0 = unknown.
  struct Pending { std::string name; int parent; std::uint32_t cores; double bandwidth; };
  std::deque<Pending> queue{{root->name, -1, root->cores, 0.0}};
  std::vector<std::string> seen;
  while (!queue.empty()) {
    Pending p = std::move(queue.front());
    queue.pop_front();
    if (std::find(seen.begin(), seen.end(), p.name) != seen.end()) continue;  // listed twice: first place wins
    seen.push_back(p.name);
    lp::PlatformModel::Node n;
    n.name = p.name;
    n.parent = p.parent;
    n.cores = p.cores;
    n.link_bandwidth = p.bandwidth;
    n.task_seconds.assign(apps, 0.0);
    n.max_out_bandwidth = inf;
    std::string endpoint;
    if (auto it = by_name.find(p.name); it != by_name.end()) {
      const auto& i = *it->second;
      endpoint = i.endpoint;
      n.cores = i.cores;
      if (i.link_bandwidth > 0) n.link_bandwidth = i.link_bandwidth;
      for (std::size_t k = 0; k < apps; ++k)  // the node's own apps, matched by name
        for (std::size_t j = 0; j < i.apps.size(); ++j)
          if (i.apps[j].name == m.apps[k].name && j < i.task_seconds.size()) n.task_seconds[k] = i.task_seconds[j];
      const int self = static_cast<int>(m.nodes.size());
      for (const auto& c : i.children) queue.push_back({c.name, self, c.cores, c.link_bandwidth});
    }
    m.nodes.push_back(std::move(n));
    t.endpoints.push_back(endpoint);
  }

  // Fill in the unknowns.
  for (std::size_t k = 0; k < apps; ++k) {
    std::vector<double> known;
    for (const auto& n : m.nodes)
      if (n.task_seconds[k] > 0) known.push_back(n.task_seconds[k]);
    double fill = median(known);
    if (!(fill > 0)) fill = root->apps[k].flops / (static_cast<double>(root->apps[k].cores_per_task) * default_speed);
    if (!(fill > 0)) fill = 1.0;  // an application without flop (noop): durations only relative
    for (auto& n : m.nodes)
      if (!(n.task_seconds[k] > 0)) {
        n.task_seconds[k] = fill;
        if (n.cores > 0) ++t.guessed_task_seconds;
      }
  }
  std::vector<double> bws;
  for (std::size_t u = 1; u < m.nodes.size(); ++u)
    if (m.nodes[u].link_bandwidth > 0) bws.push_back(m.nodes[u].link_bandwidth);
  for (const auto& [name, bw] : measured)
    if (bw > 0) bws.push_back(bw);
  const double fill_bw = bws.empty() ? inf : median(bws);
  m.nodes[0].link_bandwidth = inf;
  for (std::size_t u = 1; u < m.nodes.size(); ++u)
    if (!(m.nodes[u].link_bandwidth > 0)) {
      m.nodes[u].link_bandwidth = fill_bw;
      ++t.guessed_bandwidths;
    }
  return t;
}

AutoParent choose_live_parent(const LiveTree& tree, const std::map<std::string, double>& measured,
                              const std::string& joiner_name, std::uint32_t cores, double speed,
                              const std::string& entry, const ParentChoiceOptions& options) {
  const auto& m = tree.model;
  const JoiningNode j = live_joiner(tree, joiner_name, cores, speed);
  std::vector<ParentCandidate> candidates;
  std::size_t entry_node = 0;
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    if (m.nodes[u].name == entry) entry_node = u;
    if (auto it = measured.find(m.nodes[u].name); it != measured.end() && it->second > 0 && !tree.endpoints[u].empty())
      candidates.push_back({u, it->second});
  }
  if (candidates.empty()) throw std::invalid_argument("--parent auto: no node of the tree could be measured");
  AutoParent out;
  out.choice = choose_parent(m, j, entry_node, candidates, options);
  out.node = out.choice.parent;
  out.name = m.nodes[out.node].name;
  out.endpoint = tree.endpoints[out.node];
  return out;
}

JoiningNode live_joiner(const LiveTree& tree, const std::string& name, std::uint32_t cores, double speed) {
  const auto& m = tree.model;
  JoiningNode j;
  j.name = name;
  j.cores = cores;
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    const double s = speed > 0 && tree.flops[k] > 0 ? tree.flops[k] / (static_cast<double>(m.apps[k].cores_per_task) * speed) : 0.0;
    std::vector<double> v;
    for (const auto& n : m.nodes) v.push_back(n.task_seconds[k]);
    j.task_seconds.push_back(s > 0 ? s : median(v));
  }
  return j;
}

lp::PlatformModel with_subtree(lp::PlatformModel model, const LiveTree& subtree) {
  const auto& sub = subtree.model;
  if (model.nodes.empty() || sub.nodes.size() < 2) return model;
  const std::size_t mover = model.nodes.size() - 1;
  const std::size_t apps = model.apps.size();
  for (std::size_t s = 1; s < sub.nodes.size(); ++s) {
    lp::PlatformModel::Node n = sub.nodes[s];
    const int p = sub.nodes[s].parent;  // parents come before children in both models
    n.parent = static_cast<int>(p <= 0 ? mover : mover + static_cast<std::size_t>(p));
    n.task_seconds.assign(apps, 0.0);
    for (std::size_t k = 0; k < apps; ++k) {
      n.task_seconds[k] = model.nodes[mover].task_seconds[k];
      for (std::size_t j = 0; j < sub.apps.size() && j < sub.nodes[s].task_seconds.size(); ++j)
        if (sub.apps[j].name == model.apps[k].name) n.task_seconds[k] = sub.nodes[s].task_seconds[j];
    }
    model.nodes.push_back(std::move(n));
  }
  return model;
}

ReparentChoice reparent_choice(const LiveTree& tree, const std::map<std::string, double>& measured,
                               const std::string& name, std::uint32_t cores, double speed,
                               const std::string& current_parent, double min_gain, const LiveTree* subtree) {
  const auto& m = tree.model;
  const JoiningNode j = live_joiner(tree, name, cores, speed);
  lp::ClpSolver solver;
  ReparentChoice out;
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    const auto it = measured.find(m.nodes[u].name);
    if (it == measured.end() || !(it->second > 0) || tree.endpoints[u].empty()) continue;
    auto candidate = with_joiner(m, j, u, it->second);
    if (subtree) candidate = with_subtree(std::move(candidate), *subtree);
    const double v = lp::solve(candidate, solver).fair_throughput;
    ++out.evaluations;
    if (m.nodes[u].name == current_parent) {
      out.current = u;
      out.current_throughput = v;
    } else if (!out.best || v > out.best_throughput) {
      out.best = u;
      out.best_throughput = v;
    }
  }
  out.move = out.best && (!out.current || out.best_throughput > (1 + min_gain) * out.current_throughput);
  return out;
}

}  // namespace treefarm::plan
