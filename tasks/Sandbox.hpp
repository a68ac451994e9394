#pragma once
/// @file Sandbox.hpp
/// Runs one program of a command task contained (docs/command-tasks.md, "Containment"):
/// as the run-as user (SandboxOptions), in its own folder, with a clean environment, in
/// its own cgroup (Cgroup.hpp) or else its own process group, under rlimits, its standard
/// output and error read while it runs and stopped at their limits; when its first
/// process ends, every process it left is killed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tasks/SandboxOptions.hpp"

namespace treefarm::tasks {

/// What to run.
struct SandboxRun {
  std::vector<std::string> argv;   ///< argv[0] without '/' is looked up on the clean PATH
  std::vector<std::string> env;    ///< NAME=VALUE added to the clean environment
  std::string stdin_file;          ///< a file of the work folder, the program's standard input
  std::vector<int> cpus;           ///< OS CPU indices it is confined to (empty: the worker's)
  std::uint32_t cores = 1;         ///< cores it holds (RLIMIT_CPU is timeout x cores)
  double timeout = 0;              ///< seconds of wall clock before it is killed (0: none)
  std::uint64_t memory_bytes = 0;  ///< bytes (0: SandboxOptions::memory_bytes)
  std::uint64_t file_bytes = 0;    ///< bytes, RLIMIT_FSIZE (0: SandboxOptions::file_bytes)
  std::uint64_t max_stdout_bytes = 0;  ///< bytes of standard output before it is stopped (0: file_bytes)
  std::uint64_t max_stderr_bytes = 0;  ///< bytes of standard error before it is stopped (0: file_bytes)
  std::size_t keep_stderr_bytes = 0;   ///< the last bytes of standard error kept in SandboxEnd
  /// Receives standard output as it comes (null: read and thrown away).
  std::function<void(std::span<const std::byte>)> on_stdout;
};

/// How it ended.
struct SandboxEnd {
  bool started = false;       ///< false: it could not be started; `start_error` says why
  std::string start_error;
  int status = 0;             ///< wait status of its first process
  bool timed_out = false;     ///< killed at its timeout
  bool shutdown = false;      ///< killed by stop_all_commands()
  std::string limit;          ///< a limit it went over ("" if none), e.g. "standard output over 100 bytes"
  std::string stderr_tail;    ///< the last keep_stderr_bytes bytes of standard error
  bool stderr_cut = false;    ///< standard error was longer than stderr_tail
  std::uint64_t stdout_bytes = 0;  ///< bytes of standard output read
  double seconds = 0;         ///< wall clock seconds from start to the end of its first process
  bool in_cgroup = false;     ///< it ran in its own cgroup (false: the fallback)
};

/// The folder of one task and the runs of its program in it. Not thread-safe; one per task.
class Sandbox {
 public:
  /// Makes SCRATCH/treefarm-task-XXXXXX (this process's, mode 0711) and in it `work`
  /// (the run-as user's, mode 0700): the program's working folder and HOME. Throws
  /// std::runtime_error if they cannot be made.
  explicit Sandbox(SandboxSettings settings);
  /// Removes the folder and everything in it.
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  /// The work folder's path.
  const std::string& work_dir() const { return work_; }
  /// Writes a file of the work folder (the run-as user's, mode 0600) and returns its path.
  /// Throws std::runtime_error on failure.
  std::string write_file(const std::string& name, std::span<const std::byte> bytes);
  /// Opens (read-only) a file the program left in the work folder, only if it is a regular
  /// file (a symbolic link, a FIFO or a device is refused) owned by the run-as user.
  /// Returns the descriptor (the caller closes it), -1 if it does not exist, or -2 with
  /// `why` set if it is refused.
  int open_output(const std::string& name, std::string& why) const;
  /// Runs the program and returns when it and every process it started have ended.
  SandboxEnd run(const SandboxRun& run);

 private:
  SandboxSettings settings_;
  std::string outer_;
  std::string work_;
  int work_fd_ = -1;
};

}  // namespace treefarm::tasks
