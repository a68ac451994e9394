#include "worker/AutoParent.hpp"

#include <deque>
#include <set>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "runtime/zmq/TreeQueryClient.hpp"

namespace treefarm::worker {

AutoParentResult find_parent(const AutoParentOptions& o) {
  zmq_node::TreeQueryClient client;
  std::vector<net::msg::TreeInfo> infos;
  std::set<std::string> asked, names;
  std::deque<std::string> queue{o.join};
  std::string entry;
  // Breadth-first over the tree: every node names its parent's endpoint and its children's.
  while (!queue.empty() && asked.size() < o.max_nodes) {
    const std::string ep = queue.front();
    queue.pop_front();
    if (ep.empty() || !asked.insert(ep).second) continue;
    auto a = client.ask(ep, 0, o.timeout);
    if (!a) {
      if (ep == o.join) throw std::runtime_error("--join " + o.join + ": no treefarm node answered there within " +
                                                 std::to_string(o.timeout) + " s");
      spdlog::warn("{}: --parent auto: {} did not answer; it will not be a candidate", o.name, ep);
      continue;
    }
    if (ep == o.join) entry = a->info.name;
    if (!names.insert(a->info.name).second) continue;  // the same node under another address
    a->info.endpoint = ep;  // where it answered: reachable from here
    queue.push_back(a->info.parent_endpoint);
    for (const auto& c : a->info.children) queue.push_back(c.endpoint);
    infos.push_back(std::move(a->info));
  }
  AutoParentResult r;
  for (const auto& i : infos) {
    if (auto bw = client.bandwidth(i.endpoint, o.probe_bytes, o.probe_repeats, o.timeout)) {
      r.measured[i.name] = *bw;
      spdlog::info("{}: --parent auto: {} ({}) -> here: {:.1f} MB/s", o.name, i.name, i.endpoint, *bw / 1e6);
    } else {
      spdlog::warn("{}: --parent auto: could not measure the link from {}", o.name, i.name);
    }
  }
  r.tree = plan::live_tree(infos, r.measured);
  plan::ParentChoiceOptions po;
  po.seed = o.seed;
  r.parent = plan::choose_live_parent(r.tree, r.measured, o.name, o.cores, o.speed, entry, po);
  return r;
}

}  // namespace treefarm::worker
