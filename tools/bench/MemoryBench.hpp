#pragma once
/// @file MemoryBench.hpp
/// `treefarm bench memory` (issue 14): the master's memory per task. Runs a bag of no-op
/// tasks on a local tree and reads the master's own figures from results.json
/// (`master_memory`: resident set before anything per task existed, and its peak once
/// every task was written to results.json), beside the same figures for an empty run (one
/// task) in the same invocation. Also times results.json's task list written as the
/// master writes it (streamed from the task log) beside the DOM it used to build
/// (nlohmann::json of every task), on the same synthetic records.

#include <cstdint>
#include <ostream>

namespace treefarm::bench {

struct MemoryBenchOptions {
  std::uint64_t tasks = 10000000;   ///< No-op tasks in the measured run, >= 1.
  std::uint32_t workers = 1;        ///< 1-core workers under the master; 0 = the master computes them itself.
  std::uint32_t buffer = 1000;      ///< Buffer bound B.
  std::uint64_t dom_tasks = 300000; ///< Records in the results.json write comparison (0 = skip it).
  double timeout = 0;               ///< seconds per run (0 = none)
  bool json = false;                ///< JSON instead of text.
};

/// Prints bytes per task = (peak RSS − RSS at start) / tasks, the same growth of the empty
/// run, the figure net of it, wall time and tasks/s, and the results.json write times.
/// JSON: `bytes_per_task`, `net_bytes_per_task`, `reference` {...}, `results_json` {...}.
/// @return 0, or the run's exit code when it failed.
/// @throws std::invalid_argument for tasks = 0.
int bench_memory(std::ostream& out, const MemoryBenchOptions& options);

}  // namespace treefarm::bench
