#pragma once
/// @file NodeRuntime.hpp
/// The ZeroMQ adapter: drives one node scheduler core (runtime/core) from real sockets
/// and a real executor. A DEALER connects to the parent (absent at the root), a ROUTER
/// serves the children; executor completions wake the loop through an eventfd. The same
/// class runs inside treefarm-worker and treefarm-master (the root is a node whose
/// "parent" is the bag of tasks).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/Events.hpp"
#include "runtime/model/Application.hpp"
#include "runtime/net/Curve.hpp"
#include "runtime/net/Messages.hpp"

namespace zmq { class message_t; }

namespace treefarm::worker {

/// How a node is started.
struct NodeOptions {
  std::string name;                     ///< Unique node name.
  std::string parent;                   ///< Parent endpoint (tcp://HOST:PORT); empty at the root.
  std::string listen = "tcp://127.0.0.1:*";  ///< Where children connect ("" = no children).
  std::string ready_file;               ///< If set, the bound endpoint is written here once listening.
  std::vector<int> cores;               ///< OS indices of the cores to compute on (empty: forward only).
  std::uint64_t memory = 0;             ///< bytes advertised and handed to tasks (0: not accounted).
  bool backfill = true;
  double join_timeout = 30;             ///< seconds to wait for the parent's Welcome.
  double heartbeat_interval = 1.0;      ///< seconds between heartbeats to parent and children
  double heartbeat_timeout = 6.0;       ///< seconds of silence after which a peer is dead
  net::CurveConfig curve;               ///< CURVE encryption and authentication.
  /// Allow unencrypted links on non-loopback addresses (otherwise an error).
  bool insecure = false;
  /// A worker that loses its parent rejoins it (same endpoint) with bounded exponential
  /// back-off for up to this many seconds before giving up (0 = exit at once).
  double rejoin_timeout = 60;
  /// A task lost with this many dead children of this node is reported failed.
  std::uint32_t max_task_losses = 3;
  /// Root: give up when no node can compute (no child, no local cores) for this long.
  double orphan_timeout = 30;
};

/// What only the root has: the run configuration and the bag of tasks.
struct RootSetup {
  net::msg::Welcome welcome;            ///< Sent to every child; also configures the root.
  std::vector<model::AppSpec> apps;
  /// The input of a task (shared, sent without copying).
  std::function<std::shared_ptr<const std::vector<std::byte>>(core::TaskId)> payload;
  /// A result reached the root; `duplicate` if the task was already recorded.
  std::function<void(const net::msg::Result&, bool duplicate, double now)> on_result;
  /// A node joined somewhere in the tree.
  std::function<void(const net::msg::NodeJoined&)> on_joined;
  /// Called about every `tick_interval` seconds (progress lines).
  std::function<void(double now)> on_tick;
  double tick_interval = 1.0;
  /// Dispatching starts when this many nodes (besides the root) have joined, or after
  /// `wait_timeout` seconds, whichever comes first.
  std::size_t wait_for_nodes = 0;
  double wait_timeout = 60;
  /// Called once when dispatching starts: the time origin of the run.
  std::function<void(double now)> on_start;
  /// Calibration runs: a measurement reached the root (from anywhere in the tree).
  std::function<void(const net::msg::Measure&)> on_measure;
  /// Resumed runs: per application, tasks already completed (core::NodeConfig::done_before).
  std::vector<std::vector<bool>> done_before;
};

class NodeRuntime {
 public:
  /// A worker (options.parent set) or the root (root set).
  NodeRuntime(NodeOptions options, std::optional<RootSetup> root = std::nullopt);
  ~NodeRuntime();
  NodeRuntime(const NodeRuntime&) = delete;
  NodeRuntime& operator=(const NodeRuntime&) = delete;

  /// Runs until the run completes (root), Shutdown arrives (worker), stop() is called,
  /// or a fatal error. Returns the process exit code (0 = fine).
  int run();
  /// Asks run() to return soon (async-signal-safe: sets a flag).
  void stop();
  /// Root: ends the run normally (children get Shutdown) at the next loop turn; for
  /// calibration runs, which end when every measurement is in.
  void finish();

  /// The endpoint children connect to, once run() has bound it.
  std::string endpoint() const;

  /// Seconds since the node started (steady clock).
  double now() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_requested_{false};
};

/// model::AppSpec from the wire description of an application.
model::AppSpec app_from_wire(const net::msg::AppInfo& info);
/// The wire description of an application.
net::msg::AppInfo app_to_wire(const model::AppSpec& app);

}  // namespace treefarm::worker
