#pragma once
/// @file CpuQuota.hpp
/// The CPU quota (cgroup CPU bandwidth) this process runs under, if any: v1
/// cpu.cfs_quota_us / cpu.cfs_period_us or v2 cpu.max, of its own group and every
/// ancestor (the tightest applies). Calibration times its kernels over several of the
/// quota's periods (runtime/node/CalibrationWindow.hpp).

#include <optional>
#include <string>

namespace treefarm::exec {

struct CpuQuota {
  double cores = 0;           ///< CPU time per period over the period (0.3 = a third of a core)
  double period_seconds = 0;  ///< the period, seconds (0.1 by default)
  std::string group;          ///< the control group directory that sets it
};

/// The tightest quota over this process's control group and its ancestors; nullopt when
/// none is set or cgroups cannot be read. `proc_cgroup` and `root` let tests point it at
/// files of their own.
std::optional<CpuQuota> cpu_quota(const std::string& proc_cgroup = "/proc/self/cgroup",
                                  const std::string& root = "/sys/fs/cgroup");

}  // namespace treefarm::exec
