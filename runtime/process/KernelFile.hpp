#pragma once
/// @file KernelFile.hpp
/// Reading the small text files the kernel exports (cgroup controls such as cgroup.procs,
/// cpuset.cpus, cgroup.controllers, cpuacct.usage): one helper for every reader of them.

#include <string>

namespace treefarm::process {

/// The text of the kernel file at `path` with trailing newlines and spaces removed; ""
/// when it cannot be read (a cgroup already removed, a controller not mounted): callers
/// treat a missing control as an empty one.
std::string read_kernel_file(const std::string& path);

}  // namespace treefarm::process
