#pragma once
/// @file Bench.hpp
/// `treefarm bench ...`: figures measured side by side in one run.

#include <ostream>
#include <string>

namespace treefarm::tools {

/// No-op tasks from the master through one worker on loopback (tasks/s), beside the raw
/// ZeroMQ one-way message rate (messages/s) over TCP loopback, measured in the same run.
/// With `encryption`, the dispatch rate is also measured with CURVE on both links, side
/// by side (plain, CURVE, plain, CURVE), and the ratio printed.
/// `comm_model`: "multi-port" (default: measures the runtime's per-task cost) or
/// "one-port" (each transfer ends with the worker's acknowledgement, so every task also
/// pays a loopback round trip, beyond the window of small transfers: node::NodeOptions::
/// one_port_window). `depth` 2 puts a 0-core forwarder between the master and the worker.
/// With `dashboard`, the dispatch rate is also measured with the master serving its live
/// dashboard (docs/dashboard.md) and a client following /api/events throughout, runs
/// alternated (plain, dashboard, ...), `rounds` of each (0: 1 alone, 2 when comparing).
int bench_dispatch(std::ostream& out, std::uint64_t tasks, std::uint64_t payload_bytes, std::uint32_t buffer, bool json,
                   bool encryption = false, const std::string& comm_model = "multi-port", int depth = 1,
                   bool dashboard = false, int rounds = 0);

/// Random kills (SIGKILL) and restarts of workers during a run of about `minutes`
/// minutes on a 6-node tree, beside the same run without chaos: tasks lost (must be 0),
/// duplicates dropped, wrong results (must be 0), throughput ratio. Returns 0 when no task
/// was lost or wrong.
int bench_chaos(std::ostream& out, double minutes, double kill_interval, std::uint64_t seed, bool json);

}  // namespace treefarm::tools
