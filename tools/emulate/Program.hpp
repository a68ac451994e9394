#pragma once
/// @file Program.hpp
/// Runs the system programs the emulator drives (`ip`, `tc`) through runtime/process —
/// never a shell — and captures their output, so that a failure is reported with the exact
/// command line, its exit code and what it wrote on stderr.

#include <stdexcept>
#include <string>
#include <vector>

namespace treefarm::emulate {

/// What a finished program left behind.
struct ProgramResult {
  int exit_code = -1;  ///< Exit status, or 128+signal if it was killed.
  std::string out;     ///< Everything it wrote on stdout.
  std::string err;     ///< Everything it wrote on stderr.
};

/// A program that could not be started or exited with a non-zero status. what() reads
/// "COMMAND LINE: exited with code N: STDERR".
class ProgramError : public std::runtime_error {
 public:
  ProgramError(const std::vector<std::string>& argv, const ProgramResult& result);
  const ProgramResult& result() const { return result_; }

 private:
  ProgramResult result_;
};

/// Runs argv[0] (looked up in PATH) with argv, stdin from /dev/null, in its own process
/// group (a Ctrl-C at the terminal reaches the tool, which then tears down in order,
/// rather than killing a half-done `ip` command). Waits for it; never throws on a
/// non-zero exit. Throws std::runtime_error if fork or pipe fails; a program that
/// cannot be executed exits with code 127 and says why on stderr.
ProgramResult run_program(const std::vector<std::string>& argv);

/// run_program, then throws ProgramError unless the exit code is 0. Returns stdout.
std::string run_checked(const std::vector<std::string>& argv);

/// The command line as one string, for messages ("ip netns add tf1a2b-n0").
std::string command_line(const std::vector<std::string>& argv);

}  // namespace treefarm::emulate
