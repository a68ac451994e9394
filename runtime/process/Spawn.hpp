#pragma once
/// @file Spawn.hpp
/// The one way treefarm starts a child process: a program (spawn) or a function of this
/// program run in a forked copy (spawn_function), both set up by one ChildSetup (standard
/// streams, process group, signals, death with the parent). Every fork of the project
/// goes through here, so that what a child inherits is decided in one place.

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace treefarm::process {

/// What a child does between fork and its work. Descriptors are this process's; each
/// given one is dup2'd onto the child's standard stream, -1 keeps the stream inherited.
struct ChildSetup {
  int stdin_fd = -1;             ///< Onto the child's stdin (-1: inherited).
  bool stdin_null = false;       ///< stdin from /dev/null (overrides stdin_fd).
  int stdout_fd = -1;            ///< Onto the child's stdout (-1: inherited).
  int stderr_fd = -1;            ///< Onto the child's stderr (-1: inherited).
  std::vector<int> close_fds;    ///< Closed in the child (e.g. other children's pipes).
  /// Signal the child gets when this process dies (PR_SET_PDEATHSIG); nullopt: none. A
  /// child whose parent died before the signal was armed exits with code 127.
  std::optional<int> parent_death_signal;
  bool own_process_group = false;  ///< setpgid(0, 0): a Ctrl-C at the terminal does not reach it.
  /// SIGINT, SIGTERM and SIGPIPE back at their defaults and no signal blocked (this
  /// process's handlers or ignored SIGPIPE would otherwise keep the child alive).
  bool default_signals = false;
};

/// Starts argv[0] (looked up in PATH) with argv. If it cannot be executed, the child
/// writes "cannot start ARGV0: REASON" on its stderr and exits with code 127. Returns the
/// child's pid. Throws std::invalid_argument for an empty argv, std::runtime_error
/// (naming argv[0]) if fork fails.
pid_t spawn(const std::vector<std::string>& argv, const ChildSetup& setup = {});

/// Flushes stdio, forks, and in the child runs `body` and leaves with _exit(its return
/// value) (1 if it throws), without the parent's atexit code. `what` names the child in
/// the error thrown if fork fails (std::runtime_error).
pid_t spawn_function(const std::function<int()>& body, const ChildSetup& setup, const std::string& what);

/// Waits for `pid`, retrying on EINTR; its wait status (-1 if it is not our child).
int wait(pid_t pid);
/// Reaps `pid` if it ended, without blocking: its wait status, or nullopt if it runs.
std::optional<int> try_wait(pid_t pid);
/// A wait status as a shell reports it: the exit code, or 128 + the signal that ended it.
int exit_code(int status);

}  // namespace treefarm::process
