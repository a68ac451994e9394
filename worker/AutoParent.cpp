#include "worker/AutoParent.hpp"

#include <algorithm>
#include <deque>
#include <set>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "runtime/zmq/TreeQueryClient.hpp"

namespace treefarm::worker {

namespace {
/// What the joiner learnt of the live tree: the nodes' answers, the links measured from
/// each to here, their keys (CURVE), the name of the node at `join`.
struct Learnt {
  std::vector<net::msg::TreeInfo> infos;
  std::map<std::string, double> measured;
  std::map<std::string, std::string> key_of;  // endpoint -> public key (CURVE)
  std::string entry;
  std::string parent_of_leaving;              // the parent's name of o.leaving ("" = not seen)
};

/// The next endpoint of a breadth-first walk over TreeQuery answers that was not asked yet
/// ("" when the walk is over or has asked `max_nodes`).
std::string next_to_ask(std::deque<std::string>& queue, std::set<std::string>& asked, std::size_t max_nodes) {
  while (!queue.empty() && asked.size() < max_nodes) {
    std::string ep = std::move(queue.front());
    queue.pop_front();
    if (!ep.empty() && asked.insert(ep).second) return ep;
  }
  return {};
}

/// Breadth-first over the tree from `o.join` (every node names its parent's endpoint and
/// its children's), then a link probe from every node reached. A node named `o.leaving`
/// (re-parenting: this worker) is neither asked nor kept, nor is its subtree.
Learnt learn_tree(const AutoParentOptions& o) {
  zmq_node::TreeQueryClient client;
  client.cancel_when(o.cancel);
  Learnt l;
  const auto learn_key = [&](const std::string& endpoint, const std::string& key) {
    if (!o.curve || endpoint.empty() || key.empty()) return;
    l.key_of.emplace(endpoint, key);
    client.server_key(endpoint, key);
  };
  if (o.curve) {
    client.set_curve(*o.curve);
    learn_key(o.join, o.join_key);
  }
  std::set<std::string> asked, names;
  std::deque<std::string> queue{o.join};
  for (std::string ep; !(ep = next_to_ask(queue, asked, o.max_nodes)).empty();) {
    auto a = client.ask(ep, 0, o.timeout);
    if (!a) {
      if (ep == o.join) throw std::runtime_error("--join " + o.join + ": no treefarm node answered there within " +
                                                 std::to_string(o.timeout) + " s" +
                                                 (o.curve ? " (under CURVE: is --parent-key that node's key, and this "
                                                            "worker's key in its authorized_keys?)" : ""));
      spdlog::warn("{}: --parent auto: {} did not answer; it will not be a candidate", o.name, ep);
      continue;
    }
    if (!o.leaving.empty() && a->info.name == o.leaving) continue;  // itself (reached through an address)
    if (ep == o.join) l.entry = a->info.name;
    if (!names.insert(a->info.name).second) continue;  // the same node under another address
    a->info.endpoint = ep;  // where it answered: reachable from here
    learn_key(a->info.parent_endpoint, a->info.parent_public_key);
    queue.push_back(a->info.parent_endpoint);
    auto& children = a->info.children;
    if (!o.leaving.empty()) {
      const auto self = std::find_if(children.begin(), children.end(), [&](const auto& c) { return c.name == o.leaving; });
      if (self != children.end()) {
        l.parent_of_leaving = a->info.name;
        children.erase(self);
      }
    }
    for (const auto& c : children) {
      learn_key(c.endpoint, c.public_key);
      queue.push_back(c.endpoint);
    }
    l.infos.push_back(std::move(a->info));
  }
  for (const auto& i : l.infos) {
    if (auto bw = client.bandwidth(i.endpoint, o.probe_bytes, o.probe_repeats, o.timeout)) {
      l.measured[i.name] = *bw;
      spdlog::info("{}: --parent auto: {} ({}) -> here: {:.1f} MB/s", o.name, i.name, i.endpoint, *bw / 1e6);
    } else {
      spdlog::warn("{}: --parent auto: could not measure the link from {}", o.name, i.name);
    }
  }
  return l;
}

/// Re-parenting: this worker's own subtree, asked from its own listener downwards (its
/// TreeInfo with the parent left out, so that live_tree() makes it the root), or nullopt
/// when it has no listener, no child, or does not answer itself (under CURVE its own key
/// must be in its authorized_keys).
std::optional<plan::LiveTree> learn_subtree(const AutoParentOptions& o) {
  if (o.self_endpoint.empty()) return std::nullopt;
  zmq_node::TreeQueryClient client;
  client.cancel_when(o.cancel);
  if (o.curve) {
    client.set_curve(*o.curve);
    client.server_key(o.self_endpoint, o.curve->public_key);
  }
  std::vector<net::msg::TreeInfo> infos;
  std::set<std::string> asked;
  std::deque<std::string> queue{o.self_endpoint};
  for (std::string ep; !(ep = next_to_ask(queue, asked, o.max_nodes)).empty();) {
    auto a = client.ask(ep, 0, o.timeout);
    if (!a) {
      spdlog::warn("{}: re-parenting: {} of this subtree did not answer; not counted", o.name, ep);
      if (ep == o.self_endpoint) return std::nullopt;
      continue;
    }
    if (ep == o.self_endpoint) a->info.parent_endpoint.clear();
    for (const auto& c : a->info.children) {
      if (o.curve && !c.public_key.empty()) client.server_key(c.endpoint, c.public_key);
      queue.push_back(c.endpoint);
    }
    infos.push_back(std::move(a->info));
  }
  if (infos.empty() || infos.front().children.empty()) return std::nullopt;
  try {
    return plan::live_tree(infos, {});
  } catch (const std::invalid_argument& e) {
    spdlog::warn("{}: re-parenting: this subtree cannot be modelled ({}); not counted", o.name, e.what());
    return std::nullopt;
  }
}

std::string key_for(const AutoParentOptions& o, const Learnt& l, const std::string& endpoint) {
  if (!o.curve) return {};
  const auto key = l.key_of.find(endpoint);
  if (key == l.key_of.end()) throw std::runtime_error("--parent auto: no public key known for " + endpoint);
  return key->second;
}
}  // namespace

AutoParentResult find_parent(const AutoParentOptions& o) {
  Learnt l = learn_tree(o);
  AutoParentResult r;
  r.measured = std::move(l.measured);
  r.tree = plan::live_tree(l.infos, r.measured);
  plan::ParentChoiceOptions po;
  po.seed = o.seed;
  r.parent = plan::choose_live_parent(r.tree, r.measured, o.name, o.cores, o.speed, l.entry, po);
  r.parent_key = key_for(o, l, r.parent.endpoint);
  return r;
}

ReparentResult evaluate_reparent(const AutoParentOptions& o, double min_gain) {
  if (o.leaving.empty()) throw std::invalid_argument("evaluate_reparent needs the leaving node's name");
  Learnt l = learn_tree(o);
  ReparentResult r;
  r.current_parent = l.parent_of_leaving;
  const auto tree = plan::live_tree(l.infos, l.measured);
  const auto subtree = learn_subtree(o);
  r.subtree_nodes = subtree ? subtree->model.nodes.size() - 1 : 0;
  r.choice = plan::reparent_choice(tree, l.measured, o.name, o.cores, o.speed, l.parent_of_leaving, min_gain,
                                   subtree ? &*subtree : nullptr);
  if (r.choice.best) {
    r.target.name = tree.model.nodes[*r.choice.best].name;
    r.target.endpoint = tree.endpoints[*r.choice.best];
    r.target.public_key = key_for(o, l, r.target.endpoint);
  }
  return r;
}

}  // namespace treefarm::worker
