#pragma once
/// @file TransportCeiling.hpp
/// The transport's own ceiling for tiny tasks, the same-run reference of `bench tasks`:
/// raw ZeroMQ (TCP loopback, the tree's transport) moving the tasks' bytes between a master
/// process and two worker processes, batched as the tree batches them, with no kernel, no
/// scheduler and no checks. What the tree reaches with real tasks is bounded by it.

#include <cstddef>
#include <cstdint>

namespace treefarm::bench {

struct TransportCeilingOptions {
  std::uint64_t tasks = 100000;
  std::size_t input_bytes = 16384;   ///< bytes sent down per task
  std::size_t result_bytes = 8192;   ///< bytes sent back per task
  std::uint32_t buffer = 1000;       ///< tasks in flight per worker (the tree's buffer bound)
  std::size_t batch_bytes = 1u << 20;///< bytes of inputs per batch message at most (the tree's batch frame)
  std::uint32_t workers = 2;         ///< worker processes
  /// false: a batch is one frame of its inputs copied one after another (the tree's batch
  /// frame) and its results one frame; true: one zero-copy frame per input and per result.
  bool frame_per_task = false;
  bool ipc = false;                  ///< ipc:// (a Unix domain socket) instead of tcp://127.0.0.1
};

/// tasks/s: the master (this process) sends each worker, from its start, `buffer` tasks in
/// messages of up to `batch_bytes` of inputs (the frame layout of `frame_per_task`); a
/// worker answers each message with one message of the same layout holding `result_bytes`
/// per task; each result lets the master send one more task. Timed from the first send to the
/// last result. The workers are child processes of this one (process::spawn_function), ended before it returns.
/// @throws std::runtime_error if a worker process cannot be started or fails.
double transport_ceiling(const TransportCeilingOptions& options);

}  // namespace treefarm::bench
