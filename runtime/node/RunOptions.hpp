#pragma once
/// @file RunOptions.hpp
/// A served root (docs/serve.md) runs experiment after experiment as one node: each run
/// takes the experiment's own root options over the served node's.

#include "runtime/node/NodeDriver.hpp"

namespace treefarm::node {

/// `served` with what `run` sets for one experiment: its migration, balance, one-port
/// window and liveness settings, and the master node's declared memory (bytes), disk
/// (bytes) and speed (flop/s per core) where it declares them (0 = the detected ones).
/// The served node keeps its name, endpoints and detected resources otherwise.
inline NodeOptions with_run_options(NodeOptions served, const NodeOptions& run) {
  served.migration = run.migration;
  served.balance = run.balance;
  served.one_port_window = run.one_port_window;
  served.heartbeat_interval = run.heartbeat_interval;
  served.heartbeat_timeout = run.heartbeat_timeout;
  served.max_task_losses = run.max_task_losses;
  served.task_deadline_factor = run.task_deadline_factor;
  served.task_deadline_floor = run.task_deadline_floor;
  served.ack_timeout = run.ack_timeout;
  if (run.memory) served.memory = run.memory;
  if (run.disk) served.disk = run.disk;
  if (run.speed > 0) served.speed = run.speed;
  return served;
}

}  // namespace treefarm::node
