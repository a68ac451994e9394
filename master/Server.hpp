#pragma once
/// @file Server.hpp
/// A served tree (docs/serve.md): `treefarm-master --serve` keeps its workers
/// connected across experiments. Experiments arrive on a submit channel — a ROUTER socket
/// of its own (`--bind`), under CURVE with the same authorized keys as the tree (who may
/// submit is who may join) — wait in a queue, and run one after another on the live root
/// (zmq_node::ZmqNode::run_root). Between runs the workers wait, connected; a worker that
/// joins between two runs is used by the next.
///
/// Submit channel: one JSON object per frame, from a DEALER (tools/ServeClient.hpp):
///   {"type":"submit","name":FILE,"experiment":TOML text,"policy":P?,"outputs":bool?,
///    "calibration":JSON text? | "calibrate":"first"|"only"?,
///    "inputs":[{path, bytes}]?} followed by one frame per input (a command's input_file,
///      written as STATE/job-N/PATH) → "queued" {id, position}, later "started" {id}; then
///      "done" {id, exit_code, results: results.json text | null, outputs: count of output
///      files (with "outputs": true), error?: why the run failed, calibration: JSON text
///      when the tree was calibrated in place ("calibrate", docs/serve.md)}; a refused
///      submission → "error" {message, and for a bad file: file, line, field}
///   {"type":"fetch","id":N,"file":I,"offset":O} from the connection that submitted N →
///      "chunk" {id, file, app, name, bytes (the file's size), offset} and at most 1 MiB of
///      the file from O in a second frame, read when asked (docs/serve.md, "Limits of the
///      submit channel": frames, input files and queues are bounded)
///   {"type":"status"} → "status" {serving, tree, waiting, running?, queue, finished}
///   {"type":"watch","id":N} from its submitter (or an admin), on a new connection after a
///      restart → its "done" goes to this connection (at once if it already ended); an id
///      the state directory does not hold → "error"
///   {"type":"cancel","id":N} → "cancelled" {id, was: "queued" | "running"}; a queued
///      job's submitter gets "done" {cancelled: true, exit_code: 130}, a running one ends at
///      the next tick (MasterOptions::cancel) and its "done" says cancelled

#include <string>

#include "master/Master.hpp"

namespace treefarm::master {

struct ServeOptions {
  /// Run settings shared by every experiment (listen, curve, cores, heartbeats, spot
  /// checks, ...); `experiment`, `out_dir` and `policy` come from each submission.
  MasterOptions base;
  std::string name = "master";                ///< The root's node name.
  std::string bind = "tcp://127.0.0.1:*";     ///< The submit/status channel.
  std::string bind_file;                      ///< The bound channel endpoint is written here.
  /// Each submission's experiment file, state (job.json) and results go to DIR/job-N/
  /// (mode 0700; required: treefarm-master passes --state-dir or a TemporaryStateDir). A
  /// master started with a DIR that holds queued or running experiments takes them up
  /// (master/ServeState.hpp).
  std::string state_dir;
  /// seconds an experiment without [[node]] tables waits for the nodes of the last run
  /// before starting with those present.
  double live_wait = 10;
  /// Accept command applications (docs/security.md, "No programs for strangers"): only
  /// then, and only from a CURVE client/admin key or over an ipc:// channel from the
  /// master's own user or root. A master that computes (--cpus) cannot allow them.
  bool allow_commands = false;
};

/// Serves until interrupted (stop_master()); returns the exit code (0, or 1 on error).
int serve(const ServeOptions& options);

/// Ends serve() soon: the running experiment is interrupted (async-signal-safe). Called
/// before serve() set up its tree (a SIGTERM right at start), serve() returns at once.
void stop_serving();

}  // namespace treefarm::master
