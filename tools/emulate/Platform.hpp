#pragma once
/// @file Platform.hpp
/// An emulated LAN on this machine, built from an experiment's tree (docs/emulation.md):
/// one network namespace per node, one veth pair per tree edge with its own /30 subnet,
/// both ends shaped with `tc ... tbf` to the link's bandwidth, and per node a CPU quota
/// and core set (control groups). Everything is removed by teardown(), by the destructor
/// on every exit path, or — after a crash — by emulate_cleanup() from the state file.
///
/// Names: the platform's prefix is "tf" + 4 hex digits (e.g. "tf1a2b"); node i gets the
/// namespace and control groups PREFIX-nI; the edge to child c is the veth pair
/// PREFIX-eCp (parent side) / PREFIX-eCc (child side).

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "tools/emulate/Cgroups.hpp"
#include "tools/emulate/StateFile.hpp"

namespace treefarm::emulate {

/// Token bucket of one direction of a link: `tc qdisc add dev X root tbf rate R burst B latency L`.
struct TbfShape {
  double rate = 0;              ///< bytes/s (the experiment's bandwidth; tc gets 8× this in bit/s).
  std::uint64_t burst = 0;      ///< bytes: max(32 KiB, 10 ms at the rate).
  double latency = 0.05;        ///< seconds a packet may wait in the bucket's queue (sets its length).

  /// The shape for a link of `bytes_per_second` (> 0; throws std::invalid_argument otherwise).
  static TbfShape for_rate(double bytes_per_second);
  /// The tc arguments after "dev X root": {"tbf", "rate", "8000000bit", "burst", ...}.
  std::vector<std::string> tc_args() const;
};

/// Setup failed or was refused; what() says which step and why.
class PlatformError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Setup stopped because the interrupted flag was raised; everything created is removed.
class SetupInterrupted : public std::runtime_error {
 public:
  SetupInterrupted() : std::runtime_error("interrupted while setting up the emulated platform") {}
};

struct PlatformOptions {
  std::string prefix;        ///< "tf" + 4 lower-case hex digits; "" = a random unused one.
  std::string state_dir;     ///< Where the state file goes ("" = StateFile::default_dir()).
  std::uint16_t port = 5555; ///< Port every node listens on inside its own namespace.
};

class Platform {
 public:
  /// Builds the platform for `ex`. Throws PlatformError (with the failing command and its
  /// stderr) or SetupInterrupted (if `*interrupted` becomes true); in both cases what was
  /// already created is removed first.
  Platform(const model::Experiment& ex, PlatformOptions options = {}, const std::atomic<bool>* interrupted = nullptr);
  ~Platform();  ///< teardown(); problems are printed on stderr.
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  /// Ends every process left in the namespaces and control groups, removes them and the
  /// state file. Idempotent. Returns the problems met ("" entries never); when there are
  /// some, the state file is kept for `treefarm emulate --cleanup`.
  std::vector<std::string> teardown();
  /// Tests only: forget everything without removing it and mark the state file as owned
  /// by nobody — what a crash of the owner leaves behind.
  void leak_for_test();

  std::size_t size() const { return nodes_.size(); }
  const std::string& prefix() const { return prefix_; }
  const std::string& state_file() const { return state_path_; }
  /// Parent of node i (nullopt for the master, node 0).
  std::optional<std::size_t> parent(std::size_t i) const { return nodes_.at(i).parent; }
  /// Network namespace of node i.
  const std::string& netns(std::size_t i) const { return nodes_.at(i).netns; }
  /// Node i's address on the link to its parent ("" for the master).
  const std::string& address(std::size_t i) const { return nodes_.at(i).address; }
  /// The parent's address on the link to node i ("" for the master).
  const std::string& parent_address(std::size_t i) const { return nodes_.at(i).parent_address; }
  /// veth of the link to node i: in node i's namespace / in its parent's ("" for the master).
  const std::string& device(std::size_t i) const { return nodes_.at(i).device; }
  const std::string& parent_device(std::size_t i) const { return nodes_.at(i).parent_device; }
  /// Shaping of the link to node i, both directions (nullopt: unshaped).
  const std::optional<TbfShape>& shape(std::size_t i) const { return nodes_.at(i).shape; }
  /// Control groups node i's processes join: its CPU limits' and the one that counts its
  /// CPU time (empty: neither, no cgroup controller here).
  const std::vector<std::string>& cgroups(std::size_t i) const { return nodes_.at(i).cgroups; }
  /// CPU seconds node i's processes have used since the platform was built (its
  /// accounting group: create_accounting_cgroup); nullopt where this machine counts none.
  std::optional<double> cpu_seconds(std::size_t i) const;

  /// `[[event]]`s during a run (docs/migration.md): node i's CPU quota becomes `quota`
  /// cores' worth (its cgroup must exist: the node needs a cpu_quota in the experiment),
  /// or the link to node i is re-shaped to `bytes_per_second` both ways (`tc qdisc
  /// change`; the link needs a bandwidth). Throw PlatformError saying what is missing.
  void set_cpu_quota(std::size_t i, double quota) const;
  void set_bandwidth(std::size_t i, double bytes_per_second) const;

  /// Command prefix that runs a program as node i: it first joins the node's control
  /// groups (a `/bin/sh -c` that writes its own pid to cgroup.procs and execs — done
  /// before `ip netns exec`, which remounts /sys without the cgroup hierarchy), then
  /// `ip netns exec NETNS`. The pid stays the same throughout, so signals reach the
  /// program. With `bin_dir`, the program is looked up there by its file name.
  std::vector<std::string> wrap(std::size_t i, const std::string& bin_dir = "") const;
  /// What node i binds for its children: tcp://0.0.0.0:PORT (inside its namespace).
  std::string listen_endpoint(std::size_t i) const;
  /// What node i connects to: its parent's address on their link, with the port of the
  /// endpoint the parent bound (`parent_bound`, e.g. "tcp://0.0.0.0:5555").
  std::string parent_endpoint(std::size_t i, const std::string& parent_bound) const;

  /// Address plan: the link to child c (c >= 1) is 10.213.0.0 + 4(c−1), a /30; the
  /// parent's end is .1 of it, the child's .2. Throws std::invalid_argument beyond 16384.
  static std::string edge_address(std::size_t child, bool parent_side);
  /// True for names this tool creates: "tf" + 4 hex + "-n<digits>" or "-e<digits>p|c".
  static bool is_emulation_name(const std::string& name);
  /// Ends the processes left in a namespace and deletes it. Returns "" or the problem.
  static std::string remove_netns(const std::string& name);

 private:
  struct Node {
    std::optional<std::size_t> parent;
    std::string netns, address, parent_address, device, parent_device;
    std::optional<TbfShape> shape;
    std::vector<std::string> cgroups;
    std::string accounting;  ///< The group counting its CPU time ("" = none).
  };
  void setup(const model::Experiment& ex, const std::atomic<bool>* interrupted);

  PlatformOptions options_;
  std::string prefix_;
  std::string state_path_;
  std::optional<StateFile> state_;
  std::vector<Node> nodes_;
  std::vector<std::string> created_netns_;
  std::vector<std::string> created_cgroups_;
};

}  // namespace treefarm::emulate
