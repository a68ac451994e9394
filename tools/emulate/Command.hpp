#pragma once
/// @file Command.hpp
/// Runs the system tools the emulator drives (`ip`, `tc`) with fork/exec — never a
/// shell — and captures their output, so that a failure is reported with the exact
/// command line, its exit code and what it wrote on stderr.

#include <stdexcept>
#include <string>
#include <vector>

namespace treefarm::emulate {

/// What a finished command left behind.
struct CommandResult {
  int exit_code = -1;  ///< Exit status, or 128+signal if it was killed.
  std::string out;     ///< Everything it wrote on stdout.
  std::string err;     ///< Everything it wrote on stderr.
};

/// A command that could not be started or exited with a non-zero status. what() reads
/// "COMMAND LINE: exited with code N: STDERR".
class CommandError : public std::runtime_error {
 public:
  CommandError(const std::vector<std::string>& argv, const CommandResult& result);
  const CommandResult& result() const { return result_; }

 private:
  CommandResult result_;
};

/// Runs argv[0] (looked up in PATH) with argv, stdin from /dev/null, in its own process
/// group (a Ctrl-C at the terminal reaches the tool, which then tears down in order,
/// rather than killing a half-done `ip` command). Waits for it; never throws on a
/// non-zero exit. Throws std::runtime_error if fork or pipe fails.
CommandResult run_command(const std::vector<std::string>& argv);

/// run_command, then throws CommandError unless the exit code is 0. Returns stdout.
std::string run_checked(const std::vector<std::string>& argv);

/// The command line as one string, for messages ("ip netns add tf1a2b-n0").
std::string command_line(const std::vector<std::string>& argv);

}  // namespace treefarm::emulate
