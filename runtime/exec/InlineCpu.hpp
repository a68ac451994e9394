#pragma once
/// @file InlineCpu.hpp
/// The CPU of the kernels run inline (InlineTasks.hpp) on the node's loop thread, read from
/// the thread's CPU clock once per burst of tasks instead of twice per task.
///
/// CLOCK_THREAD_CPUTIME_ID is a system call (~0.4 µs each on a loaded VM, the clock of a
/// matmul of order 32 costing as much as a fifth of the kernel). A window opens (one read)
/// before the first inline task of a burst and closes (one read) when the burst ends or
/// has lasted max_window_seconds. The window's CPU is shared among the applications by
/// the wall time their kernels took in it: CPU per wall second of the thread over the
/// window times each application's kernel seconds. The thread's waits for a CPU stay out,
/// as they did from a reading per task, in the same proportion for its kernels and for its
/// loop; the loop's own work between the kernels stays out too.
///
/// An application's share is owed until its next inline task is handed over, which
/// carries it (JobOutcome::cpu_seconds): the running total per application is its
/// kernels' CPU, at most one burst late.

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace treefarm::exec {

class InlineCpu {
 public:
  /// seconds: a window closes at a hand-over once it is this long (a read per millisecond at most).
  static constexpr double max_window_seconds = 1e-3;
  /// `thread_cpu`: the calling thread's CPU seconds so far (thread_cpu_seconds; a fake in tests).
  explicit InlineCpu(std::function<double()> thread_cpu);

  bool open() const { return open_; }
  /// Opens a window at `now` (seconds, steady clock) unless one is open.
  void begin(double now);
  /// A kernel of application `app` (a key, never read) ran `wall_seconds` in the open window.
  void ran(const void* app, double wall_seconds);
  /// Closes the open window at `now`: its CPU, shared by kernel seconds, becomes owed.
  void close(double now);
  /// Closes the open window if it has lasted max_window_seconds at `now`.
  void close_if_long(double now) {
    if (open_ && now - window_start_ >= max_window_seconds) close(now);
  }
  /// CPU seconds owed to `app`, taken (0 when none).
  double take(const void* app);
  /// Reads of the thread's CPU clock so far.
  std::size_t reads() const { return reads_; }

 private:
  std::function<double()> thread_cpu_;
  bool open_ = false;
  double window_start_ = 0;   ///< seconds, steady clock
  double window_cpu_ = 0;     ///< thread CPU seconds at the window's start
  std::vector<std::pair<const void*, double>> kernel_seconds_;  ///< this window's, per application
  std::vector<std::pair<const void*, double>> owed_;            ///< CPU seconds, per application
  std::size_t reads_ = 0;
};

}  // namespace treefarm::exec
