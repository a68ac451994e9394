#pragma once
/// @file Cgroups.hpp
/// CPU limits of an emulated node through control groups: a CPU quota (v1
/// cpu.cfs_quota_us / cpu.cfs_period_us, or v2 cpu.max) and a core set (v1 or v2
/// cpuset.cpus + cpuset.mems). Whichever version is mounted is detected.

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace treefarm::emulate {

enum class CgroupVersion { none, v1, v2 };

/// Where the cpu and cpuset controllers can be used on this machine.
struct CgroupMounts {
  CgroupVersion version = CgroupVersion::none;
  std::string cpu;     ///< Directory of the cpu controller's root ("" = not available).
  std::string cpuset;  ///< Directory of the cpuset controller's root ("" = not available).
  /// Where a group counts its processes' CPU time: v1 the cpuacct controller's root
  /// (cpuacct.usage), v2 the hierarchy's root (every group has cpu.stat); "" = nowhere.
  std::string cpuacct;

  /// Looks under `base`: v1 if base/cpu/cpu.cfs_quota_us exists (cpuset at base/cpuset),
  /// otherwise v2 if base/cgroup.controllers lists the controllers.
  static CgroupMounts detect(const std::string& base = "/sys/fs/cgroup");
};

/// CPU limits of one node, from its NodeSpec.
struct CpuLimits {
  std::optional<double> quota;  ///< Cores' worth of CPU time (0.5 = half a core); absent = none.
  std::string cpuset;           ///< Cores it may run on ("0-1"); "" = no cpuset group.
};

/// Period of the CPU quota, microseconds: quota q gives q × 100000 µs of CPU time per
/// 100000 µs (clamped to the kernel's minimum of 1000 µs).
inline constexpr long cpu_period_us = 100000;

/// Creates the control groups called `name` for the limits (one per controller in v1,
/// one in v2) and sets them. `record` is called with each directory before it is
/// created (so a crash leaves it listed for cleanup). Returns the directories a process
/// must join, by writing its pid to DIR/cgroup.procs; empty when there are no limits.
/// Throws std::runtime_error naming the file and value that were refused.
std::vector<std::string> create_cgroups(const CgroupMounts& mounts, const std::string& name, const CpuLimits& limits,
                                        const std::function<void(const std::string&)>& record);

/// A group that counts the CPU time of node `name`'s processes (a node's whole
/// CPU per task, measured where it runs). v2: the node's own group (`limit_dirs`, from
/// create_cgroups) when it has one, else a new group without limits; v1: a group of the
/// cpuacct controller. `record` as for create_cgroups. Returns "" when this machine
/// counts nowhere (no cpuacct controller mounted); the caller adds a new directory to
/// the ones the node's processes join. Throws std::runtime_error as create_cgroups.
std::string create_accounting_cgroup(const CgroupMounts& mounts, const std::string& name,
                                     const std::vector<std::string>& limit_dirs,
                                     const std::function<void(const std::string&)>& record);

/// CPU seconds the processes of group `dir` have used since it was made (v1
/// cpuacct.usage, v2 cpu.stat usage_usec); nullopt when `dir` counts none.
std::optional<double> cgroup_cpu_seconds(const std::string& dir);

/// Kills (SIGKILL) every process left in the group, waits up to 3 s for it to empty and
/// removes it. Returns "" on success (or if it did not exist), else what went wrong.
std::string remove_cgroup(const std::string& dir);

/// Changes the CPU quota of a group made by create_cgroups (cores' worth of CPU time,
/// 0.25 = a quarter of a core): cpu.cfs_quota_us (v1) or cpu.max (v2), whichever `dir`
/// has. Returns false if `dir` has neither (not the cpu group); throws std::runtime_error
/// if the kernel refuses the value.
bool set_cpu_quota(const std::string& dir, double quota);

/// Writes `value` to a control file; throws std::runtime_error with the errno text.
void write_control(const std::string& path, const std::string& value);

}  // namespace treefarm::emulate
