#pragma once
/// @file PlatformBuilder.hpp
/// Builds the SimGrid platform of a SimPlatform (internal to the SimGrid adapter).
///
/// Routing: nested star zones shaped like the tree. Every host u sits alone in a zone
/// H_u (gateway u); a node with children also has a zone Z_u holding H_u and, per child
/// v, Z_v (or H_v for a leaf) reached through one split-duplex link of the edge (u, v)
/// (bandwidth and latency of v's link; tasks go DOWN, requests and results UP). So
/// u -> v crosses exactly the edge's link, whatever the depth, and the routing data is
/// O(nodes): no N² table (a full or Floyd zone of 10,000 hosts would need 10^8 entries).
/// A node with a port (port_bandwidth > 0) gets one more shared link on all its sends.

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
};

/// Creates the zones, hosts and links in the current SimGrid engine (which must exist
/// and have no platform yet), and one host per CPU pool, alone in a zone of its own under
/// the root's, reached by no link (nothing is sent to it).
BuiltPlatform build_platform(const SimPlatform& platform);

}  // namespace treefarm::sim
