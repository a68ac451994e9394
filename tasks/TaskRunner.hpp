#pragma once
/// @file TaskRunner.hpp
/// Runs one task of an application on its input buffer and returns the result checksum.

#include <cstddef>
#include <cstdint>
#include <span>

#include <oneapi/tbb/task_arena.h>

#include "runtime/model/Application.hpp"
#include "tasks/Checksum.hpp"

namespace treefarm::tasks {

/// Runs the kernel of `app` on `input` and returns the checksum of the result.
///
/// @param app    the application; its kernel must be matmul, matadd or noop.
/// @param input  the task's input, exactly app.input_bytes() bytes: for matmul and matadd
///               A then B, n×n row-major doubles each (2·n²·8 bytes); for noop the
///               payload (`bytes` bytes). Any alignment (a misaligned buffer is copied).
/// @param arena  cores of a multi-core task; null or max_concurrency() == 1 runs on the
///               calling thread. Only matmul uses several threads (matmul_blocked).
/// @param index  the task's index in its bag (only a command uses it: "{index}").
///               A command runs through run_command (tasks/CommandTask.hpp), unpinned; its
///               failure is thrown as std::runtime_error carrying the reason and stderr.
/// @return checksum_product(C, n) for matmul, checksum_matrix(C, n) for matadd; checksum_bytes(input) for noop.
///         sha256_checksum of the output for a command. Compare it with checksum_matches.
/// @throws std::invalid_argument if input.size() != app.input_bytes() or the kernel is
///         abstract.
///
/// C lives in a thread_local scratch buffer that grows to the largest task seen on the
/// thread and is reused, so a steady stream of tasks does not allocate.
double run_task(const model::AppSpec& app, std::span<const std::byte> input,
                tbb::task_arena* arena, std::uint64_t index = 0);

}  // namespace treefarm::tasks
