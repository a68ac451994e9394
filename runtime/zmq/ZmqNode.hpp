#pragma once
/// @file ZmqNode.hpp
/// The ZeroMQ adapter: runs one node driver (runtime/node) on real sockets and real
/// cores. A DEALER connects to the parent (absent at the root), a ROUTER serves the
/// children, the executor's completions wake the loop through an eventfd; the loop
/// sleeps in zmq::poll until a socket is readable or the driver's next deadline. Task
/// payloads travel without copying: a received frame is shared by the executor, the
/// store and the sends to children until its last reader lets go.
///
/// Used by treefarm-master (the root) and treefarm-worker alike.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/zmq/Curve.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::zmq_node {

/// Where a node connects and listens, and how its links are secured.
struct Endpoints {
  std::string parent;                        ///< tcp://HOST:PORT of the parent; empty at the root.
  std::string listen = "tcp://127.0.0.1:*";  ///< Where children connect ("" = no children).
  std::string ready_file;                    ///< If set, the bound endpoint is written here.
  net::CurveConfig curve;                    ///< CURVE encryption and authentication.
  bool insecure = false;                     ///< Allow unencrypted non-loopback links.
  /// The listening endpoint as other machines reach it, told to `--parent auto` joiners
  /// (msg::TreeInfo); "" = the bound endpoint (a wildcard host stays a wildcard).
  std::string advertise;
  /// Root of a served tree (docs/serve.md): constructed without a RootSetup; run_root()
  /// runs one experiment after another on the same sockets, idle() keeps the tree between.
  bool serve = false;
};

/// The cores a node computes on.
struct Compute {
  std::vector<int> cores;     ///< OS indices (empty: only forward); labels only when shared_cpus is set.
  /// Non-empty: the CPUs this node shares with other nodes of the machine; it computes on
  /// cores.size() of them at a time, not pinned (exec::ExecutorConfig::shared_cpus).
  std::vector<int> shared_cpus = {};
  std::uint64_t memory = 0;   ///< bytes handed to tasks (0: not accounted).
  bool backfill = true;
  /// Measures flop/s per core here, for `treefarm probe` (msg::ProbeRequest without a
  /// target); empty: such requests are refused.
  std::function<double()> speed_probe = {};
};

class ZmqNode {
 public:
  /// Throws std::invalid_argument for unsafe or inconsistent settings.
  ZmqNode(node::NodeOptions options, Endpoints endpoints, Compute compute,
          std::optional<node::RootSetup> root = std::nullopt);
  ~ZmqNode();
  ZmqNode(const ZmqNode&) = delete;
  ZmqNode& operator=(const ZmqNode&) = delete;

  /// Runs until the node ends; returns its exit code (node::ExitCode).
  int run();
  /// Asks run() to end soon, with `exit_code` (async-signal-safe: sets a flag).
  void stop(int exit_code = node::exit_interrupted);
  /// Root: ends the run normally at the next loop turn (calibration runs).
  void finish();
  /// The endpoint children connect to, once run() has bound it.
  std::string endpoint() const;
  /// Re-parenting (thread-safe): asks run() to leave the parent for `target` at the next
  /// loop turn (NodeDriver::move_to; under CURVE `target.public_key` is the new parent's).
  void move_to(net::msg::Ancestor target);
  /// The parent now: endpoint ("" at the root or before run()) and, under CURVE, its
  /// public key; thread-safe.
  net::msg::Ancestor parent() const;

  // ---- Served root (Endpoints::serve; docs/serve.md) ----------------------------------
  /// Binds the children's socket (once; later calls only return it) and writes the
  /// ready file. Returns the bound endpoint.
  std::string open();
  /// Runs one experiment on the live tree: the children that said Hello since the last
  /// run (or during its end) join it at once. At its normal end every child is told to
  /// reset (forget the run, say Hello again) instead of exiting. Returns the run's exit
  /// code (node::ExitCode). Call from one thread, never while idle() runs. `run` is the
  /// experiment's root options (master::root_node_options): its migration, balance,
  /// one-port window, liveness settings and the master node's declared memory, disk and
  /// speed apply to this run; the served node keeps its name and what it detected.
  int run_root(node::RootSetup root, const node::NodeOptions& run);
  /// Between runs: keeps the children's connections, answers each Hello "wait, no run now"
  /// (a Shutdown with reset) and keeps it for the next run, until `wake()` is true or stop()
  /// was called (then returns false). `wake` is called about every 0.1 s on this thread.
  bool idle(const std::function<bool()>& wake);
  /// Why the last run_root() failed to start or ended by an error ("" = it did not): a
  /// Welcome too large for the wire, an error in the run. The children then stay (each is
  /// told to reset) for the next run.
  const std::string& run_error() const;
  /// Names of the children waiting for the next run (said Hello since the last one ended).
  std::vector<std::string> waiting_children() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> stop_code_{-1};
  std::atomic<bool> finish_requested_{false};
  mutable std::mutex move_mutex_;
  std::optional<net::msg::Ancestor> move_request_;  ///< guarded by move_mutex_
  net::msg::Ancestor parent_now_;                    ///< guarded by move_mutex_
};

}  // namespace treefarm::zmq_node
