#pragma once
/// @file Benchmark.hpp
/// Times the real kernels, for calibration (`treefarm calibrate`).

#include <oneapi/tbb/task_arena.h>

#include "runtime/model/Application.hpp"

namespace treefarm::tasks {

/// Median wall-clock time, in seconds, of one task of `app` (run_task on a pooled input,
/// checksum included), after one untimed warm-up run.
/// @param app          a runnable application (matmul, matadd or noop).
/// @param repetitions  timed runs, ≥ 1.
/// @param arena        as for run_task: null or concurrency 1 = single-threaded.
/// @throws std::invalid_argument if repetitions < 1 or the kernel is abstract.
/// A task's rate for the model is app.task_flops() / time_kernel(...) flop/s.
double time_kernel(const model::AppSpec& app, int repetitions, tbb::task_arena* arena);

/// Flop/s of one core, as `treefarm probe` asks a node for it (msg::ProbeRequest without a
/// target; the worker and the master answer alike): a 512×512 matmul (2·512³ flop) on the
/// calling thread, median of 3 runs after a warm-up.
double speed_per_core();

}  // namespace treefarm::tasks
