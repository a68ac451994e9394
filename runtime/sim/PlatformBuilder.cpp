#include "runtime/sim/PlatformBuilder.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <simgrid/kernel/ProfileBuilder.hpp>

#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

namespace treefarm::sim {

namespace sg4 = simgrid::s4u;

double port_bandwidth(const SimPlatform& platform, std::size_t u) { return platform.nodes[u].max_out_bandwidth; }

namespace {

/// The largest value a resource takes over the run: SimGrid's profiles scale a resource's
/// peak by factors in [0, 1], so the peak is the largest value and the profile says which
/// fraction of it holds from when.
double peak_of(double initial, const std::vector<std::pair<double, double>>& changes) {
  double peak = initial;
  for (const auto& [at, v] : changes) peak = std::max(peak, v);
  return peak;
}

/// A SimGrid profile: `initial`/`peak` from time 0, then each change's value/peak.
simgrid::kernel::profile::Profile* profile_of(const std::string& name, double initial, double peak,
                                              const std::vector<std::pair<double, double>>& changes) {
  std::ostringstream text;
  text.precision(17);
  text << "0 " << initial / peak << "\n";
  for (const auto& [at, v] : changes) text << at << " " << v / peak << "\n";
  return simgrid::kernel::profile::ProfileBuilder::from_string(name, text.str(), -1);
}

/// A sealed host of `cores` cores at `speed` flop/s each in `zone`; `[[event]]` changes
/// of its speed, if any, as a profile over its peak.
sg4::Host* create_host(sg4::NetZone* zone, const std::string& name, double speed, std::uint32_t cores,
                       const std::vector<std::pair<double, double>>& changes) {
  const double peak = peak_of(speed, changes);
  auto* host = zone->create_host(name, peak)->set_core_count(static_cast<int>(cores));
  if (!changes.empty()) host->set_speed_profile(profile_of("speed-" + name, speed, peak, changes));
  return host->seal();
}

}  // namespace

double link_peak_bandwidth(const SimNode& node) { return peak_of(node.bandwidth, node.bandwidth_changes); }

BuiltPlatform build_platform(const SimPlatform& platform) {
  const auto& nodes = platform.nodes;
  const std::size_t n = nodes.size();
  BuiltPlatform built;
  built.hosts.assign(n, nullptr);
  auto& hosts = built.hosts;
  std::vector<sg4::NetZone*> subtree(n, nullptr);  // Z_u, for nodes with children
  std::vector<sg4::NetZone*> top(n, nullptr);      // Z_u, or H_u for a leaf
  std::vector<sg4::NetZone*> created;              // in creation order (parents first)

  // SimGrid's hierarchical routing wants a zone to hold zones or hosts, not both (a host
  // beside sub-zones is not found as a route end), so every host sits alone in its own
  // zone H_u, gateway u. Nodes come breadth-first: every parent before its children.
  for (std::size_t u = 0; u < n; ++u) {
    const SimNode& node = nodes[u];
    sg4::NetZone* home = node.parent < 0 ? nullptr : subtree[static_cast<std::size_t>(node.parent)];
    if (!node.children.empty()) {
      subtree[u] = sg4::create_star_zone("tree-" + node.name);
      if (home) subtree[u]->set_parent(home);
      created.push_back(subtree[u]);
    }
    auto* own = sg4::create_star_zone("host-" + node.name);
    if (subtree[u])
      own->set_parent(subtree[u]);
    else if (home)
      own->set_parent(home);
    created.push_back(own);
    // A host has at least one core in SimGrid; a forwarding node never executes anything.
    hosts[u] = create_host(own, node.name, node.speed, std::max(node.cores, 1u), node.speed_changes);
    top[u] = subtree[u] ? subtree[u] : own;
    auto* me = hosts[u]->get_netpoint();

    if (subtree[u]) {
      const double port = port_bandwidth(platform, u);
      if (port > 0) {
        // All of u's sends share one more link, the node's port (bertin2008 §2.1:
        // max_out_bandwidth). The one-port rule is kept by NodeActor instead, which shares
        // it among concurrent sends in time: a port link of the fastest child's bandwidth
        // let "pbc"'s concurrent sends to unequal links use more than the one-port's
        // time (up to 2.2x on the paper campaign's stars, issue 21).
        const sg4::Link* out = subtree[u]->create_link("out-" + node.name, port)->seal();
        subtree[u]->add_route(own->get_netpoint(), nullptr, me, nullptr, {sg4::LinkInRoute(out)}, false);
        subtree[u]->add_route(nullptr, own->get_netpoint(), nullptr, me, {}, false);
      } else {
        subtree[u]->add_route(own->get_netpoint(), nullptr, me, nullptr, {}, true);
      }
    }
    if (home) {
      const double peak = peak_of(node.bandwidth, node.bandwidth_changes);
      sg4::Link* link = home->create_split_duplex_link("link-" + node.name, peak)->set_latency(node.latency);
      if (!node.bandwidth_changes.empty())  // `[[event]]`s change its bandwidth during the run
        link->set_bandwidth_profile(profile_of("bandwidth-" + node.name, node.bandwidth, peak, node.bandwidth_changes));
      const sg4::Link* edge = link->seal();
      // UP from the child towards the parent (requests, results); DOWN carries tasks.
      home->add_route(top[u]->get_netpoint(), nullptr, me, nullptr,
                      {sg4::LinkInRoute(edge, sg4::LinkInRoute::Direction::UP)}, true);
    }
  }
  // CPU pools (calibrated hosts, SimNode::cpu_pool): hosts that only execute.
  std::vector<sg4::Host*> pools;
  for (const auto& pool : platform.cpu_pools) {
    if (!subtree[0]) throw std::logic_error("CPU pool '" + pool.name + "' on a platform of one node");
    auto* zone = sg4::create_star_zone("zone-" + pool.name);
    zone->set_parent(subtree[0]);
    created.push_back(zone);
    pools.push_back(create_host(zone, pool.name, pool.speed, pool.cores, pool.speed_changes));
  }
  built.exec_hosts = hosts;
  for (std::size_t u = 0; u < n; ++u)
    if (nodes[u].cpu_pool >= 0) built.exec_hosts[u] = pools.at(static_cast<std::size_t>(nodes[u].cpu_pool));
  for (auto it = created.rbegin(); it != created.rend(); ++it) (*it)->seal();
  return built;
}

}  // namespace treefarm::sim
