#pragma once
/// @file PlatformBuilder.hpp
/// Builds the SimGrid platform of a SimPlatform (internal to the SimGrid adapter).
///
/// Routing: one star zone holds every host and link, and each edge (u, v) of the tree is
/// a pair of bypass routes between the two hosts: u -> v crosses u's port link (if any)
/// then the DOWN half of v's split-duplex link (bandwidth and latency of v's link; tasks
/// go DOWN), v -> u its UP half (requests and results). Only neighbours communicate, so
/// the routing data is O(nodes): no N² table (a full or Floyd zone of 10,000 hosts would
/// need 10^8 entries), and one zone keeps the set-up linear (SimGrid 3.32 seals a zone by
/// walking every host of the engine: a zone per node cost O(nodes²)).
/// A node with a port (port_bandwidth > 0) gets one more shared link on all its sends
/// to its children.

#include <vector>

#include <simgrid/s4u/Host.hpp>

#include "runtime/sim/SimPlatform.hpp"

namespace treefarm::sim {

/// Peak bandwidth (bytes/s) of the link from the node's parent: its largest value over
/// the run (`[[event]]`s may change it; a profile scales the peak). The link's halves
/// are named "link-NAME_UP" and "link-NAME_DOWN" (tasks go DOWN).
double link_peak_bandwidth(const SimNode& node);

/// Bandwidth (bytes/s) of node u's sending port, shared by all its concurrent sends; 0:
/// none. It is max_out_bandwidth (bertin2008 §2.1), under either communication model.
/// One-port needs no port link: NodeActor shares the port among concurrent sends in time.
double port_bandwidth(const SimPlatform& platform, std::size_t u);

/// The SimGrid hosts of a built platform, in node order: each node's own host (its
/// actors, its links) and the host its executions run on (its own, or its CPU pool's:
/// SimNode::cpu_pool).
struct BuiltPlatform {
  std::vector<simgrid::s4u::Host*> hosts;
  std::vector<simgrid::s4u::Host*> exec_hosts;
  /// Per node: the DOWN half of the link from its parent ("link-NAME_DOWN"; null for
  /// the root), which NodeActor's one-port sharing throttles.
  std::vector<simgrid::s4u::Link*> down_links;
};

/// Creates the zone, hosts, links and routes in the current SimGrid engine (which must
/// exist and have no platform yet), and one host per CPU pool, reached by no link
/// (nothing is sent to it).
BuiltPlatform build_platform(const SimPlatform& platform);

}  // namespace treefarm::sim
