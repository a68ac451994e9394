#pragma once
/// @file ChildProcess.hpp
/// A child process (here: an ssh client) whose stdin is a pipe this object holds open and
/// whose stdout and stderr come back through one pipe. Holding stdin open matters: the
/// remote side of `treefarm launch` ends its node when the ssh session's stdin reaches
/// EOF, so closing it (or this process dying) stops the remote node. The child gets
/// SIGTERM if this process dies (PR_SET_PDEATHSIG) and runs in its own process group (a
/// Ctrl-C reaches the launcher, which tears down in order).

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace treefarm::deploy {

class ChildProcess {
 public:
  /// Starts argv[0] (looked up in PATH). Throws std::runtime_error if it cannot.
  explicit ChildProcess(const std::vector<std::string>& argv);
  /// terminate(3 s) if still running.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// Writes all of `data` to the child's stdin (blocking). False if the child closed it.
  bool write_stdin(const std::string& data);
  /// Closes the child's stdin: it reads EOF.
  void close_stdin();
  /// File descriptor to poll for output (-1 once the output reached EOF).
  int output_fd() const { return out_fd_; }
  /// What the child wrote since the last call, without blocking ("" if nothing).
  std::string read_output();
  /// Reaps the child if it exited (non-blocking); its exit code (128+signal if killed).
  std::optional<int> poll_exit();
  /// Waits up to `seconds` for the child to exit, reading its output meanwhile (appended
  /// to `output` if not null). Returns the exit code, or nullopt if still running.
  std::optional<int> wait(double seconds, std::string* output = nullptr);
  /// SIGTERM, up to `grace` seconds, then SIGKILL; reaps. Returns the exit code.
  int terminate(double grace = 3.0);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  std::optional<int> exit_code_;
};

/// Runs argv with `input` on its stdin, waits up to `timeout` seconds (then ends it: exit
/// code 124) and returns {exit code, stdout+stderr}.
std::pair<int, std::string> run_with_input(const std::vector<std::string>& argv, const std::string& input, double timeout);

}  // namespace treefarm::deploy
