#pragma once
/// @file SandboxOptions.hpp
/// How this process contains the command tasks it runs (docs/command-tasks.md,
/// "Containment"): the user they run as, where their folders go, their default limits.
/// Set once by the worker from its options (configure_sandbox); a process that never sets
/// them gets the defaults.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace treefarm::tasks {

/// Which cgroups a task is put in.
enum class CgroupChoice {
  automatic,  ///< v1 if its pids hierarchy is mounted, else v2, else none (the fallback)
  v1,         ///< the v1 hierarchies only, else none
  v2,         ///< the v2 unified hierarchy only, else none
  none,       ///< never: process-group kill and rlimits only
};

/// The options, as given on the worker's command line.
struct SandboxOptions {
  /// User name (or numeric uid) the programs run as; "": `nobody` when this process runs
  /// as root, else this process's own user.
  std::string run_as;
  /// Folder under which each task gets its own folder; "": $TMPDIR, else /tmp.
  std::string scratch;
  /// bytes of memory a task may use when its application has no memory_per_task (0: no limit).
  std::uint64_t memory_bytes = 0;
  /// Processes and threads at most in one task's cgroup (pids.max).
  std::uint64_t pids = 1024;
  /// bytes: the largest file a task may write (RLIMIT_FSIZE) when its application has no disk_per_task.
  std::uint64_t file_bytes = std::uint64_t{4} << 30;
  /// Open files per process of a task (RLIMIT_NOFILE).
  std::uint64_t open_files = 1024;
  /// Processes of the run-as user at most, all its tasks together (RLIMIT_NPROC; not
  /// enforced by the kernel for root).
  std::uint64_t user_processes = 4096;
  /// Which cgroups to use (CgroupChoice::none: the fallback, process-group kill and rlimits).
  CgroupChoice cgroups = CgroupChoice::automatic;
};

/// The user a task runs as.
struct RunAsUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  bool switch_user = false;  ///< differs from this process's user: set (groups, gid, uid) in the child
};

/// The options in force, the user resolved and the scratch folder chosen.
struct SandboxSettings {
  SandboxOptions options;
  RunAsUser user;
  std::string scratch;
};

/// The user `run_as` names, as SandboxOptions::run_as says. Throws std::invalid_argument
/// for an unknown user, or for another user than this process's when it is not root.
RunAsUser resolve_run_as(const std::string& run_as);

/// Checks `options` and makes them those of every later command task of this process;
/// also lets tasks start again after stop_all_commands(). Throws std::invalid_argument
/// (see resolve_run_as; a scratch folder that is not a folder).
void configure_sandbox(const SandboxOptions& options);

/// The settings in force (the defaults, resolved, if configure_sandbox was never called).
SandboxSettings sandbox_settings();

/// Kills every command task of this process that is running (each is reported failed:
/// "the worker is shutting down") and refuses new ones until allow_commands() or
/// configure_sandbox() is called. For the worker's shutdown. Returns how many were running.
std::size_t stop_all_commands();
/// Lets command tasks start again after stop_all_commands().
void allow_commands();

namespace detail {
/// A running task's program registers how to kill it while it runs (Sandbox::run).
/// Returns its registration, or 0 if stop_all_commands() was called: do not start it.
std::uint64_t register_running(std::function<void()> kill);
void unregister_running(std::uint64_t registration);
}  // namespace detail

}  // namespace treefarm::tasks
