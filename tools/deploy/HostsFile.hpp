#pragma once
/// @file HostsFile.hpp
/// The hosts file of `treefarm launch` (docs/launch.md): the machines a tree is started
/// on over ssh, how to reach them, and optionally which nodes of the experiment each runs.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/Experiment.hpp"

namespace treefarm::deploy {

/// One machine reachable over ssh.
struct Host {
  std::string name;                       ///< Label in messages and logs (default: the address).
  std::string address;                    ///< ssh destination and the address other nodes connect to.
  std::string user;                       ///< ssh user ("" = ssh's own choice: ~/.ssh/config, $USER).
  std::uint16_t port = 0;                 ///< ssh port (0 = ssh's own choice, 22).
  std::vector<std::string> ssh_options;   ///< Extra ssh arguments, e.g. {"-i", "KEY"} or {"-F", "CONFIG"}.
  std::string bin_dir = "/usr/bin";       ///< Where treefarm-master and treefarm-worker are on the host.
  std::string work_dir = "/tmp";          ///< A run directory is made under it (and removed at the end).
  std::uint16_t port_base = 5555;         ///< TCP ports its nodes listen on: port_base, port_base + 1, ...
  std::vector<std::string> nodes;         ///< Nodes of the experiment placed here (may be empty).
  int line = 0;                           ///< Line of the [[host]] entry.
};

/// A parsed hosts file.
struct HostsFile {
  std::string path;
  std::vector<Host> hosts;
};

/// Parses hosts-file text (TOML): an optional [defaults] table with any of user, port,
/// ssh_options, bin_dir, work_dir, port_base, and one [[host]] table per machine with
/// address (required), name, nodes and the same keys. Throws model::FileError naming the
/// file, line and field.
HostsFile parse_hosts(const std::string& text, const std::string& path);
/// Reads and parses a hosts file.
HostsFile load_hosts(const std::string& path);

/// Which host runs each node: `host_of[i]` for node i of the experiment.
struct Placement {
  std::vector<std::size_t> host_of;
  std::vector<std::uint16_t> port_of;  ///< TCP port node i listens on (its host's port_base + k).
};

/// Places the experiment's nodes: a node listed in a host's `nodes` goes there; the
/// others go round-robin (in the experiment's breadth-first order, master first) over the
/// hosts that list no node, or over all hosts if every host lists some. Throws
/// model::FileError (hosts file, the host's line, field "nodes") for an unknown node or a
/// node listed twice.
Placement place_nodes(const model::Experiment& ex, const HostsFile& hosts);

}  // namespace treefarm::deploy
