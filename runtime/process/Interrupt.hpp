#pragma once
/// @file Interrupt.hpp
/// The one stop request of a process (SIGINT, SIGTERM): a flag a signal handler sets and
/// whatever waits (on a child, a socket, a search) polls, the exception that ends a
/// command once it saw it (exit_interrupted, 130), and the immediate ending of a command
/// that holds nothing to clean up. cli_support's run_commands() installs the handlers of
/// `treefarm`; treefarm-master and treefarm-worker their own.

#include <atomic>
#include <stdexcept>
#include <string>
#include <sys/types.h>

namespace treefarm::process {

/// Set once SIGINT or SIGTERM arrived (by on_stop_signal()).
std::atomic<bool>& stop_requested();
/// The signal that set stop_requested() (SIGINT until one came).
std::atomic<int>& stop_signal();
/// A signal handler: records `sig` and sets stop_requested() (async-signal-safe).
void on_stop_signal(int sig);

/// A command saw stop_requested() and ended: exit_interrupted (130). The message is the
/// one line the user reads ("interrupted; ...").
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws Interrupted(message) if stop_requested().
void throw_if_stopped(const std::string& message);

/// For a command with nothing to clean up and no point where it polls (a search, a
/// solve): from now on SIGINT/SIGTERM write "PROGRAM: error: interrupted; WHAT" on stderr
/// and end the process at once with exit_interrupted (130). Nothing it writes must be
/// half-written when it ends this way: write outputs through an atomic file.
void exit_at_once_on_stop(const std::string& program, const std::string& what);

/// Reads `fd` (a child's report pipe) to its end and closes it; if stop_requested()
/// becomes true first, ends `child` (SIGKILL), reaps it, closes `fd` and throws
/// Interrupted(message).
std::string read_child_report(int fd, pid_t child, const std::string& message);

}  // namespace treefarm::process
