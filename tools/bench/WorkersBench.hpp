#pragma once
/// @file WorkersBench.hpp
/// `treefarm bench workers`: one bag through trees of more and more real worker processes
/// on this machine — the master's cost as the number of connected workers grows.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace treefarm::bench {

struct WorkersBenchOptions {
  std::vector<std::uint32_t> workers = {1, 4, 16, 64, 256};  ///< worker processes per run (1 core each)
  std::vector<std::uint32_t> buffers = {100, 1000};          ///< buffer bounds B (tasks), each a series
  /// 1: every worker under the master; 2: the workers spread under `forwarders` 0-core
  /// forwarders under the master.
  int depth = 1;
  std::uint32_t forwarders = 16;
  std::string kernel = "matmul";   ///< matmul, matadd or noop
  std::uint32_t n = 32;            ///< matrix order (noop: 16-byte inputs)
  std::uint64_t tasks = 100000;    ///< tasks per run
  double timeout = 600;            ///< seconds per run
  bool json = false;
  std::string plot;                ///< a PNG: the master's CPU per 1,000 tasks against workers, log-log ("" none)
};

/// Per buffer and size: the time until every worker joined (seconds, from the master's
/// start), the fair throughput (tasks/s; one application of weight 1), the master's CPU
/// seconds per 1,000 tasks during dispatch, its memory per connected worker (bytes: its
/// resident memory once all joined minus at its start, over the workers), the heartbeat
/// traffic at the master (bytes/s in and out, from the encoded messages), and the load
/// average; then, per buffer, the fitted exponent of the master's CPU per task and of the
/// join time against the workers, and each size's throughput and CPU per task relative to
/// the first size's (the same-run reference). Returns 0, a failed run's exit code, or 4
/// if a run lost a task or produced a wrong result.
/// @throws std::invalid_argument for no sizes, a size of 0, depth other than 1 or 2.
int bench_workers(std::ostream& out, const WorkersBenchOptions& options);

}  // namespace treefarm::bench
