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
  if (n == 1 && !platform.cpu_pools.empty())
    throw std::logic_error("CPU pool '" + platform.cpu_pools.front().name + "' on a platform of one node");
  BuiltPlatform built;
  built.hosts.assign(n, nullptr);
  built.down_links.assign(n, nullptr);
  auto& hosts = built.hosts;
  // One zone holds every host and link (see the header): SimGrid 3.32 seals a zone by
  // walking every host of the engine, so a zone per node made the set-up O(n²). The
  // zone's own routes are empty; each edge of the tree is a bypass route, found in a
  // std::map by its two ends. Nodes come breadth-first: every parent before its children.
  sg4::NetZone* zone = sg4::create_star_zone("treefarm platform");
  std::vector<const sg4::Link*> out(n, nullptr);  // u's port link, if any
  for (std::size_t u = 0; u < n; ++u) {
    const SimNode& node = nodes[u];
    // A host has at least one core in SimGrid; a forwarding node never executes anything.
    hosts[u] = create_host(zone, node.name, node.speed, std::max(node.cores, 1u), node.speed_changes);
    if (!node.children.empty()) {
      const double port = port_bandwidth(platform, u);
      // All of u's sends to its children share one more link, the node's port (bertin2008
      // §2.1: max_out_bandwidth). The one-port rule is kept by NodeActor instead, which
      // shares it among concurrent sends in time: a port link of the fastest child's
      // bandwidth let "pbc"'s concurrent sends to unequal links use more than the
      // one-port's time (up to 2.2x on the paper campaign's stars).
      if (port > 0) out[u] = zone->create_link("out-" + node.name, port)->seal();
    }
    if (node.parent >= 0) {
      const auto p = static_cast<std::size_t>(node.parent);
      const double peak = peak_of(node.bandwidth, node.bandwidth_changes);
      sg4::SplitDuplexLink* link = zone->create_split_duplex_link("link-" + node.name, peak);
      link->set_latency(node.latency);
      if (!node.bandwidth_changes.empty())  // `[[event]]`s change its bandwidth during the run
        link->set_bandwidth_profile(profile_of("bandwidth-" + node.name, node.bandwidth, peak, node.bandwidth_changes));
      link->seal();
      built.down_links[u] = link->get_link_down();
      // DOWN carries tasks (parent -> child, behind the parent's port); UP requests and
      // results (child -> parent).
      std::vector<sg4::LinkInRoute> down;
      if (out[p]) down.emplace_back(out[p]);
      down.emplace_back(link, sg4::LinkInRoute::Direction::DOWN);
      zone->add_bypass_route(hosts[p]->get_netpoint(), hosts[u]->get_netpoint(), nullptr, nullptr, down);
      zone->add_bypass_route(hosts[u]->get_netpoint(), hosts[p]->get_netpoint(), nullptr, nullptr,
                             {sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)});
    }
  }
  // CPU pools (calibrated hosts, SimNode::cpu_pool): hosts that only execute.
  std::vector<sg4::Host*> pools;
  for (const auto& pool : platform.cpu_pools)
    pools.push_back(create_host(zone, pool.name, pool.speed, pool.cores, pool.speed_changes));
  built.exec_hosts = hosts;
  for (std::size_t u = 0; u < n; ++u)
    if (nodes[u].cpu_pool >= 0) built.exec_hosts[u] = pools.at(static_cast<std::size_t>(nodes[u].cpu_pool));
  zone->seal();
  return built;
}

}  // namespace treefarm::sim
