#pragma once
/// @file MachineCpu.hpp
/// The machine's CPU time as the kernel counts it (/proc/stat) and the CPU limit of this
/// process's cgroup (cpu.max): the root samples them over a run for the a-posteriori
/// prediction (docs/live-model.md), which needs the CPU time other work left to the tree.

#include <optional>
#include <string>

namespace treefarm::metrics {

/// Seconds of CPU time of all the machine's CPUs together since boot.
struct MachineCpu {
  double idle_seconds = 0;   ///< idle + iowait: time no process wanted the CPUs
  double total_seconds = 0;  ///< user + nice + system + idle + iowait + irq + softirq + steal
};

/// The aggregate "cpu" line of /proc/stat's text (`ticks_per_second` = USER_HZ); none
/// when the line is missing or holds fewer than 4 numbers.
std::optional<MachineCpu> parse_proc_stat(const std::string& text, double ticks_per_second);

/// The machine now (/proc/stat); none when it cannot be read.
std::optional<MachineCpu> machine_cpu();

/// CPUs a cgroup v2 cpu.max text allows ("QUOTA PERIOD" in microseconds: QUOTA/PERIOD;
/// "max ...": none — no limit); none for anything else.
std::optional<double> parse_cpu_max(const std::string& text);

/// The CPU limit of this process's cgroup (/sys/fs/cgroup/<its path>/cpu.max, cgroup v2),
/// none when there is none or it cannot be read.
std::optional<double> cgroup_cpu_limit();

}  // namespace treefarm::metrics
