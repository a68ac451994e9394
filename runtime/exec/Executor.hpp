#pragma once
/// @file Executor.hpp
/// Runs tasks on this worker's cores: each task holds `cores` cores (and `memory` bytes)
/// for its duration and runs in a oneTBB arena of that concurrency whose threads are
/// pinned (hwloc) to the cores assigned to it, or, on a CPU set shared with other nodes
/// (ExecutorConfig::shared_cpus), bound to that set as a whole. Tasks that cannot start wait in a queue;
/// a later task may overtake the head only as the backfilling rules of
/// papers/lee2010 slides 13-14 allow (see Backfill.hpp).
///
/// Thread model: submit(), poll_done() and the accessors are called from one thread (the
/// worker's event loop); tasks run on threads owned by the executor. notify_fd() becomes
/// readable when poll_done() has something to return, so the event loop can wait on it
/// with zmq::poll beside its sockets.

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <oneapi/tbb/task_arena.h>


namespace treefarm::exec {

/// What a running task may use.
class TaskContext {
 public:
  virtual ~TaskContext() = default;
  /// OS indices of the cores (PUs) assigned to the task; size() == task's cores.
  virtual const std::vector<int>& cores() const = 0;
  /// Arena of concurrency cores().size(), its threads pinned to cores().
  virtual tbb::task_arena& arena() = 0;
};

/// A task to run.
struct ExecTask {
  std::uint64_t id = 0;          ///< Opaque to the executor, returned in ExecDone.
  std::uint32_t cores = 1;       ///< Cores held while it runs (>= 1).
  std::uint64_t memory = 0;      ///< bytes held while it runs (0: not accounted).
  /// The work, called once on a thread pinned to the first assigned core; it may use
  /// ctx.arena() for parallel parts. An exception it throws is reported in ExecDone.
  std::function<void(TaskContext& ctx)> run;
};

/// A finished task.
struct ExecDone {
  std::uint64_t id = 0;
  double queued_seconds = 0;     ///< From submit() to start.
  double run_seconds = 0;        ///< From start to end.
  /// CPU seconds (user + system) of the thread that ran the task, from start to end
  /// (CLOCK_THREAD_CPUTIME_ID): the kernel's own CPU, without the time it waited for a
  /// CPU. Parallel parts run on the arena's other threads are not in it.
  double cpu_seconds = 0;
  std::vector<int> cores;        ///< Cores it ran on.
  std::exception_ptr error;      ///< Set if run threw.
};

/// CPU seconds (user + system) the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_seconds();

/// Configuration of an executor.
struct ExecutorConfig {
  std::vector<int> cores;        ///< OS indices of the PUs it may use (from hwloc discovery).
  std::uint64_t memory = 0;      ///< bytes it may hand out (0: memory not accounted).
  bool backfill = true;          ///< false: strict FIFO (for the benchmark baseline).
  bool pin = true;               ///< Bind task threads to their cores.
  /// Non-empty: this executor shares these PUs (OS indices) with other nodes of the machine
  /// and is not pinned one thread per core: each core thread is bound to the whole set, the
  /// OS places it, and `cores` are only labels of the slots (their count is what tasks may
  /// hold at once). Empty: each core thread is pinned to its PU in `cores`.
  std::vector<int> shared_cpus = {};
};

class Executor {
 public:
  explicit Executor(ExecutorConfig config);
  ~Executor();  ///< Waits for running tasks to finish.
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Queues a task; it starts as soon as the queue discipline and free cores allow.
  /// Throws std::invalid_argument if it can never fit (more cores or memory than exist).
  void submit(ExecTask task);
  /// Finished tasks since the last call (non-blocking); clears notify_fd().
  std::vector<ExecDone> poll_done();
  /// A file descriptor readable while finished tasks are waiting in poll_done().
  int notify_fd() const;

  std::uint32_t total_cores() const;
  std::uint32_t free_cores() const;     ///< Not held by a running task.
  std::size_t queued() const;           ///< Submitted, not started.
  std::size_t running() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace treefarm::exec
