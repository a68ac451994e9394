#pragma once
/// @file Affinity.hpp
/// The CPUs this process may run on, for tests whose expectations depend on them (hwloc
/// topology, hwdetect, benchmarks needing two cores). Shared by all tests.

#include <vector>

namespace treefarm::test_support {

/// The CPU numbers of this process's affinity mask (sched_getaffinity), ascending.
/// Throws std::runtime_error if the mask cannot be read.
std::vector<int> affinity_cpus();

}  // namespace treefarm::test_support
