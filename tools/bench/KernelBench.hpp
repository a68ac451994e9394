#pragma once
/// @file KernelBench.hpp
/// `treefarm bench kernel`: the efficiency of the real kernels inside the worker's
/// executor (runtime/exec/Executor.hpp) against the same kernel called directly, measured
/// side by side in one process and one run, so the ratios hold even on a loaded machine.
///
/// It uses the first two usable cores (hwloc, restricted to the process binding). With
/// fewer than two usable cores (e.g. under `taskset -c 0`) it prints a line starting with
/// "skipped:" (JSON: {"benchmark": ..., "skipped": true, "reason": ...}) and returns 0.

#include <cstdint>
#include <ostream>
#include <vector>

namespace treefarm::bench {

/// Sizes and repetitions of bench_kernel.
struct KernelBenchOptions {
  /// Matrix order of the 1-core efficiency comparison.
  std::uint32_t n = 1024;
  /// matmul tasks per side per round of the efficiency comparison (>= 1).
  std::uint32_t tasks = 20;
  /// Rounds of the efficiency comparison (>= 1), alternating which side runs first;
  /// each side's figure is the median over the rounds.
  std::uint32_t rounds = 5;
  /// Matrix orders of the 2-core vs 1-core speed-up (each >= 1; may be empty).
  std::vector<std::uint32_t> speedup_n = {1024, 2048};
  /// Timed tasks of each kind per order in the speed-up (>= 1); medians are reported.
  std::uint32_t speedup_reps = 5;
  bool json = false;                      ///< JSON instead of text.
};

/// Kernel efficiency inside the executor, printed in GFLOP/s (1e9 flop/s, 2·n³ flop per
/// matmul task):
/// - 1-core efficiency: matmul tasks submitted continuously (2 in flight) to a 1-core
///   Executor and run through tasks::run_task (checksum included), against a plain loop
///   of tasks::matmul (one single-threaded cblas_dgemm) on a thread pinned to the same
///   core, at the same n; ratio executor / standalone (target >= 0.95). Each side also
///   reports its cpu share (process CPU seconds / wall seconds, about 1 when nothing else
///   runs on that core): how loaded the machine was.
/// - Speed-up: for each n in speedup_n, one matmul task at a time on a 2-core Executor,
///   holding 2 cores (run_task → matmul_blocked in the task's pinned 2-core arena) vs
///   1 core; speed-up = median 1-core time / median 2-core time.
/// @return 0 (also when skipped).
/// @throws std::invalid_argument for a zero option; std::runtime_error if a task fails
///         or a checksum does not verify.
int bench_kernel(std::ostream& out, const KernelBenchOptions& options);

}  // namespace treefarm::bench
