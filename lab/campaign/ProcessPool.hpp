#pragma once
/// @file ProcessPool.hpp
/// Runs many independent pieces of work in forked child processes, at most `parallel` at
/// once, each child sending its answer (a string) back through a pipe. A crash, an abort
/// or a leak in one child costs only that piece of work. A child still running
/// `kill_after` seconds after it started is killed (SIGKILL). Internal to tools/sim (the
/// paper campaign runs one SimGrid simulation per child: SimGrid runs once per process).

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace treefarm::lab::campaign {

/// How one child ended.
struct ProcessOutcome {
  std::string output;         ///< Everything the child wrote to its pipe.
  int status = 0;             ///< waitpid() status.
  bool killed = false;        ///< Killed by the pool after `kill_after` seconds.
  double wall_seconds = 0;    ///< From its fork to its end, seconds.
  bool stopped = false;       ///< Ended by the pool's signal because `stop` was set (its output is partial).
};

class ProcessPool {
 public:
  /// The work of one child: runs in the child, returns what it sends to the parent.
  using Work = std::function<std::string()>;

  /// `parallel` >= 1 children at once; `kill_after` seconds (0 = never);
  /// `flush` (optional) is flushed before every fork, as are stdout and stderr.
  ProcessPool(std::uint32_t parallel, double kill_after, std::ostream* flush = nullptr);

  /// Runs `count` pieces of work. For i in order, `prepare(i)` runs in this process and
  /// returns the Work that a forked child runs; `finished(i, outcome)` runs in this
  /// process when child i has ended, in the order the children end.
  /// When `stop` is given and becomes true (a signal handler sets it), no child is
  /// started any more, the running ones get SIGTERM (SIGKILL 2 s later) and are reported
  /// with `stopped` set, and run returns once they have ended. A child starts with
  /// SIGINT and SIGTERM at their defaults (a handler of the parent's would keep it alive).
  /// Throws std::runtime_error when pipe, fork or poll fail.
  void run(std::size_t count, const std::function<Work(std::size_t)>& prepare,
           const std::function<void(std::size_t, const ProcessOutcome&)>& finished,
           const std::atomic<bool>* stop = nullptr) const;

 private:
  std::uint32_t parallel_;
  double kill_after_;
  std::ostream* flush_;
};

}  // namespace treefarm::lab::campaign
