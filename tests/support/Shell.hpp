#pragma once
/// @file Shell.hpp
/// Runs a shell command to completion and collects what it printed, for tests that run
/// the treefarm binaries as a user does. Shared by all tests (treefarm::test_support).

#include <string>

namespace treefarm::test_support {

struct ShellResult {
  /// Its exit status; 128 + the signal if a signal ended it; -1 if it could not start.
  int exit_code = -1;
  std::string output;  ///< Its stdout (append " 2>&1" to the command for stderr too).
};

/// Runs `command` with /bin/sh (popen) and waits for it.
ShellResult run_shell(const std::string& command);

}  // namespace treefarm::test_support
