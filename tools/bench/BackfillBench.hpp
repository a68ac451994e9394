#pragma once
/// @file BackfillBench.hpp
/// `treefarm bench backfill`: the worker's executor (runtime/exec/Executor.hpp) with
/// backfilling against strict FIFO on the real kernels, both measured side by side in one
/// process and one run, so the ratios hold even on a loaded machine.
///
/// It uses the first two usable cores (hwloc, restricted to the process binding). With
/// fewer than two usable cores (e.g. under `taskset -c 0`) it prints a line starting with
/// "skipped:" (JSON: {"benchmark": ..., "skipped": true, "reason": ...}) and returns 0.

#include <cstdint>
#include <ostream>

namespace treefarm::bench {

/// Workload of bench_backfill: one stream of tasks in a fixed order, `rounds` repetitions
/// of the pattern "matadd_per_matmul 1-core matadd tasks, then one 2-core matmul task".
struct BackfillBenchOptions {
  std::uint32_t matmul_n = 1024;          ///< Matrix order of the 2-core matmul tasks.
  std::uint32_t matadd_n = 1024;          ///< Matrix order of the 1-core matadd tasks.
  std::uint32_t matadd_per_matmul = 3;    ///< matadd tasks before each matmul task (>= 1).
  std::uint32_t rounds = 50;              ///< Repetitions of the pattern (>= 1).
  /// Tasks submitted but not finished at any time (the worker's task buffer), >= 1.
  /// The executor may backfill only within this window.
  std::uint32_t window = 16;
  /// Measured runs of each discipline (>= 1), in the order B F F B B F ... so that drift
  /// in the machine's load hits both alike; figures are totals over the runs.
  std::uint32_t repeats = 4;
  bool json = false;                      ///< JSON instead of text.
};

/// Runs the BackfillBenchOptions workload on one 2-core Executor with backfilling
/// (papers/lee2010 slides 13-14) and on one with strict FIFO (ExecutorConfig.backfill =
/// false), and prints for each: wall seconds, core utilisation (busy core-seconds /
/// (2 × wall seconds); a task holding c cores for t seconds counts c·t), throughput in
/// tasks/s (all, matadd, matmul), the largest bypass count of a matmul task (tasks
/// submitted after it that started before it: the starvation bound, BC of slide 13), and
/// the ratios backfill / FIFO. Also the process's CPU seconds (getrusage) per busy
/// core-second, about 1 when no other load shares the cores: how loaded the machine was.
/// Every task's checksum is verified.
/// @return 0 (also when skipped).
/// @throws std::invalid_argument for a zero option; std::runtime_error if a task fails
///         or a checksum does not verify.
int bench_backfill(std::ostream& out, const BackfillBenchOptions& options);

}  // namespace treefarm::bench
