#pragma once
/// @file Cgroup.hpp
/// One control group per command task (docs/command-tasks.md, "Containment"): its
/// processes limited in number (pids), in memory and to the task's cores (cpuset), and
/// every one of them killed when the task ends, however it detached itself (setsid,
/// double fork).
///
/// The groups are made below this process's own groups, in a folder `treefarm-NS-PID` of each
/// hierarchy, so the limits the worker itself runs under (an emulated node's CPU quota,
/// a container's memory) still hold for its tasks. cgroup v1 (a hierarchy per controller:
/// pids, memory, cpuset) and v2 (one unified hierarchy) are both understood; what is
/// found is decided once per process (CgroupHost::get).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tasks/SandboxOptions.hpp"

namespace treefarm::tasks {

/// The limits of one task's cgroup.
struct CgroupLimits {
  std::uint64_t pids = 0;          ///< processes and threads at most (0: no limit)
  std::uint64_t memory_bytes = 0;  ///< bytes of memory at most (0: no limit)
  std::vector<int> cpus;           ///< OS CPU indices (empty: the worker's own set)
};

/// Where this process makes its tasks' cgroups: found once, the first time it is asked.
class CgroupHost {
 public:
  enum class Version { v1, v2 };
  CgroupHost() = default;
  /// Removes this process's folders `treefarm-NS-PID` (at exit).
  ~CgroupHost();
  CgroupHost(const CgroupHost&) = delete;
  CgroupHost& operator=(const CgroupHost&) = delete;
  /// The host for `choice` (not CgroupChoice::none), or null when such cgroups cannot be
  /// used here (not mounted, not writable): the reason is logged once, as a warning, and
  /// kept in unavailable_reason(). Found once per choice.
  static CgroupHost* get(CgroupChoice choice = CgroupChoice::automatic);
  /// Why get(choice) returned null ("" when it did not).
  static std::string unavailable_reason(CgroupChoice choice = CgroupChoice::automatic);

  Version version() const { return version_; }
  /// The per-process folders `treefarm-NS-PID`, one per hierarchy used (for messages and tests).
  const std::vector<std::string>& roots() const { return roots_; }
  /// Controllers that limit tasks here, e.g. "pids memory cpuset".
  const std::string& controllers() const { return controllers_; }
  /// Kills the processes in, and removes, the groups of workers of this pid namespace
  /// that are gone (killed with SIGKILL, they could not remove their own). get() calls it
  /// once; returns how many per-process folders it removed.
  int remove_stale() const;
  /// The folder this process's own group has in each hierarchy (where `treefarm-NS-PID` is made).
  std::vector<std::string> parents() const;

 private:
  friend class TaskCgroup;
  struct Hierarchy {
    std::string controller;  ///< "pids", "memory", "cpuset", or "" (the v2 unified one)
    std::string parent;      ///< this process's own group in it
    std::string root;        ///< parent + "/treefarm-NS-PID"
  };
  static std::unique_ptr<CgroupHost> detect(CgroupChoice choice, std::string& why);

  Version version_ = Version::v1;
  std::vector<Hierarchy> hierarchies_;
  std::vector<std::string> roots_;
  std::string controllers_;
  bool v2_kill_ = false;   ///< cgroup.kill exists (v2, Linux >= 5.14)
};

/// The cgroup of one task: made with its limits, then the task's first process joins it
/// (by writing "0" to each join_fds() entry, between fork and exec), then everything in
/// it is killed and the group removed (kill_all, and the destructor).
class TaskCgroup {
 public:
  /// Makes the group. Throws std::runtime_error (naming the file) if a folder or a limit
  /// cannot be written.
  TaskCgroup(CgroupHost& host, const CgroupLimits& limits);
  /// kill_all(), then removes the group's folders.
  ~TaskCgroup();
  TaskCgroup(const TaskCgroup&) = delete;
  TaskCgroup& operator=(const TaskCgroup&) = delete;

  /// `cgroup.procs` of the group in each hierarchy, opened for writing (close-on-exec).
  const std::vector<int>& join_fds() const { return join_fds_; }
  /// Kills every process in the group and returns once none is left (v2: cgroup.kill;
  /// v1: SIGKILL to each process cgroup.procs lists, again until it lists none). Safe to
  /// call from another thread while the task runs. Returns false if processes were still
  /// listed after 10 s.
  bool kill_all();
  /// Did the kernel kill a process of the group for going over its memory limit?
  bool oom_killed() const;
  /// The group's folder in its first hierarchy.
  const std::string& path() const { return paths_.front(); }

 private:
  CgroupHost& host_;
  std::vector<std::string> paths_;  ///< one per hierarchy, same order as host_.hierarchies_
  std::vector<int> join_fds_;
  std::string memory_path_;  ///< the group's folder in the memory hierarchy ("" if none)
};

}  // namespace treefarm::tasks
