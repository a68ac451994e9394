#pragma once
/// @file TasksBench.hpp
/// `treefarm bench tasks`: tiny real tasks (matmul or matadd of a small order) through a
/// master and two one-core workers on loopback, beside the no-op tasks of the same tree in
/// the same run, and the kernel called directly in this process.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace treefarm::bench {

struct TasksBenchOptions {
  std::string kernel = "matmul";        ///< matmul or matadd
  std::uint32_t n = 32;                 ///< matrix order
  /// Tasks per run; several sizes give the fitted exponent of run time against tasks.
  std::vector<std::uint64_t> tasks = {200000};
  std::uint32_t buffer = 1000;          ///< buffer bound B (tasks)
  int rounds = 1;                       ///< runs of each side, alternated (kernel, no-op, ...)
  std::string inputs = "secret";        ///< the master's --inputs: secret or pooled
  /// The transport ceiling's frames: "batch" (the tree's layout) or "task" (TransportCeiling.hpp)
  std::string ceiling_frames = "batch";
  bool json = false;
};

/// Prints, per size, the real tasks' rate (tasks/s), the no-op rate of the same tree
/// (tasks/s, 16-byte inputs), their ratio, raw ZeroMQ moving the same bytes between the
/// same processes without a kernel over tcp and ipc (TransportCeiling.hpp), the kernel's rate called directly on one core
/// (tasks/s, checksum included), and the 1-minute load average; with several sizes, the
/// fitted exponent of wall time against tasks for both sides. Returns 0, or the exit code of
/// a run that failed, or 4 if a run lost a task or produced a wrong result.
/// @throws std::invalid_argument for an unknown kernel, n = 0 or no sizes.
int bench_tasks(std::ostream& out, const TasksBenchOptions& options);

}  // namespace treefarm::bench
