#pragma once
/// @file MemoryBench.hpp
/// `treefarm bench memory`: the master's memory per task. Runs a bag of no-op
/// tasks on a local tree and reads the master's own figures from results.json
/// (`master_memory`: resident set before anything per task existed, and its peak once
/// every task was written to results.json), beside the same figures for an empty run (one
/// task) in the same invocation. Also times results.json's task list written as the
/// master writes it (streamed from the task log) beside the DOM it used to build
/// (nlohmann::json of every task), on the same synthetic records.
/// With `array`, the bag is a command application `array = "1-TASKS"` running `true`
/// (docs/command-tasks.md), its workers without cgroups (`--cgroups none`), and the peak
/// is printed beside the 200 MB (200·10^6 bytes) the master must stay under.

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
  /// A command bag `array = "1-TASKS"` of `true` instead of no-op tasks.
  bool array = false;
};

/// The master's peak RSS a bag of a million array tasks must stay under, bytes (200 MB).
inline constexpr std::uint64_t array_bag_limit_bytes = 200'000'000;

/// Prints bytes per task = (peak RSS − RSS at start) / tasks, the same growth of the empty
/// run, the figure net of it, wall time and tasks/s, and the results.json write times.
/// JSON: `bytes_per_task`, `net_bytes_per_task`, `reference` {...}, `results_json` {...};
/// with `array` also `kind` "array", `peak_mb`, `limit_mb`, `within_limit`.
/// @return 0; 1 when a run failed, or with `array` when the peak is over the limit.
/// @throws std::invalid_argument for tasks = 0.
int bench_memory(std::ostream& out, const MemoryBenchOptions& options);

}  // namespace treefarm::bench
