#include "runtime/model/Origins.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace treefarm::model {

namespace {
std::string origin_of(const Experiment& ex, const AppSpec& app) {
  return app.origin.empty() && !ex.nodes.empty() ? ex.nodes[0].name : app.origin;
}
}  // namespace

std::vector<std::string> app_origins(const Experiment& experiment) {
  std::vector<std::string> out;
  for (const auto& app : experiment.apps) {
    const std::string o = origin_of(experiment, app);
    if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
  }
  return out;
}

bool has_origins_below_root(const Experiment& experiment) {
  for (const auto& app : experiment.apps)
    if (!experiment.nodes.empty() && origin_of(experiment, app) != experiment.nodes[0].name) return true;
  return false;
}

Experiment rerooted(const Experiment& ex, const std::string& origin) {
  const auto start = ex.node_index(origin);
  if (!start) throw std::invalid_argument("origin '" + origin + "': no [[node]] of that name in " + ex.path);
  Experiment out = ex;
  out.apps.clear();
  for (const auto& app : ex.apps) {
    if (origin_of(ex, app) != origin) continue;
    out.apps.push_back(app);
    out.apps.back().origin.clear();
  }
  if (out.apps.empty()) throw std::invalid_argument("origin '" + origin + "': no application of " + ex.path + " comes from it");

  // Breadth-first from the origin: each node's new parent is the neighbour it was found
  // from; child_end[w] is the node now at the child end of the file's link above w.
  const std::size_t n = ex.nodes.size();
  std::vector<bool> seen(n, false);
  std::vector<std::string> child_end(n);
  std::deque<std::size_t> queue{*start};
  seen[*start] = true;
  out.nodes.clear();
  NodeSpec root = ex.nodes[*start];
  root.parent.reset();
  root.bandwidth.reset();
  root.latency = 0;
  out.nodes.push_back(root);
  while (!queue.empty()) {
    const std::size_t u = queue.front();
    queue.pop_front();
    auto next = ex.children(u);
    const auto up = ex.parent_index(u);
    if (up) next.push_back(*up);
    for (std::size_t w : next) {
      if (seen[w]) continue;
      seen[w] = true;
      NodeSpec node = ex.nodes[w];
      node.parent = ex.nodes[u].name;
      if (up && w == *up) {  // the file's link above u, now crossed from u to w
        node.bandwidth = ex.nodes[u].bandwidth;
        node.latency = ex.nodes[u].latency;
        child_end[u] = node.name;
      } else {
        child_end[w] = node.name;
      }
      out.nodes.push_back(std::move(node));
      queue.push_back(w);
    }
  }
  out.events.clear();
  for (const auto& e : ex.events) {
    if (e.kind != EventKind::bandwidth) {
      out.events.push_back(e);
      continue;
    }
    const auto w = ex.node_index(e.node);
    if (w && !child_end[*w].empty()) {
      out.events.push_back(e);
      out.events.back().node = child_end[*w];
    }
  }
  return out;
}

}  // namespace treefarm::model
