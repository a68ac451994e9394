#pragma once
/// @file CommandTask.hpp
/// The application kind `command` (docs/command-tasks.md): the user's own
/// program, run once per task as a child process with its input in a file, its output
/// digested, its exit status checked and its standard error kept when it fails.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/model/Application.hpp"

namespace treefarm::tasks {

/// How one run of a command ended.
struct CommandOutcome {
  bool failed = false;       ///< Did not start, exited non-zero, was killed, timed out, or wrong digest.
  std::string error;         ///< Why (exit status or signal, then the tail of its stderr), when failed.
  int exit_status = -1;      ///< Exit status, or -1 when it did not exit normally.
  std::uint64_t output_bytes = 0;  ///< bytes of output
  std::string sha256;        ///< SHA-256 of the output, 64 lowercase hex digits
  double checksum = 0;       ///< The output digest as a result checksum (command_checksum)
  double seconds = 0;        ///< seconds from spawn to exit (wall clock)
  /// The output's bytes, when the application sends its outputs back (AppSpec::send_output)
  /// and the run succeeded; null otherwise.
  std::shared_ptr<const std::vector<std::byte>> output = {};
};

/// The argument vector of task `index`: "{index}", "{input}" and "{output}" inside any
/// element replaced by the index (decimal) and the two paths.
std::vector<std::string> expand_argv(const std::vector<std::string>& argv, std::uint64_t index,
                                     const std::string& input_path, const std::string& output_path);

/// A SHA-256 digest as a result checksum: its first 53 bits as an integer-valued double
/// (exact, so equal outputs give equal checksums and checksum_matches compares exactly).
double sha256_checksum(const std::string& sha256_hex);

/// The SHA-256 of `bytes` as 64 lowercase hex digits (libsodium).
std::string sha256_hex(std::span<const std::byte> bytes);

/// Runs task `index` of the command application `app` on `input`, contained
/// (tasks/Sandbox.hpp, docs/command-tasks.md): as the run-as user of sandbox_settings(),
/// in its own folder under the scratch folder, with a clean environment, in its own cgroup
/// (or process group), confined to `cpus` (OS core indices; empty: the worker's).
///
/// `input` is written to the file "input" of that folder, which is also the program's
/// standard input; the output is the file "{output}" names if the template uses it (a
/// regular file of the task's user, else the run fails), else the program's standard
/// output, read and digested while it runs; standard error is read while it runs and its
/// last max_error_bytes are kept in `error` when the run fails. After app.timeout seconds
/// (0: none) every process of the task is killed, and so it is when its first process
/// ends. With app.send_output the output's bytes are kept in the outcome, and an output
/// over app.max_output_bytes fails the run (standard output is stopped as soon as it
/// passes the limit). The folder is removed afterwards.
///
/// Never throws for a failure of the program: it is reported in the outcome.
/// @throws std::invalid_argument if app is not a command application.
/// @throws std::runtime_error if the private folder cannot be created or written.
CommandOutcome run_command(const model::AppSpec& app, std::span<const std::byte> input, std::uint64_t index,
                           std::span<const int> cpus);

/// Bytes of standard error kept in CommandOutcome::error (the wire's text limit, less room
/// for the exit status).
constexpr std::size_t max_error_bytes = 1900;

/// Writes the input of one task of a command application into `out`: the content of
/// app.input_file, or else app.bytes bytes of text (lines of lowercase words drawn from a
/// fixed vocabulary, compressible like prose) generated from `stream` (a seed).
/// @throws std::runtime_error if the input file cannot be read or changed size.
void fill_command_input(const model::AppSpec& app, std::uint64_t stream, std::vector<std::byte>& out);

}  // namespace treefarm::tasks
