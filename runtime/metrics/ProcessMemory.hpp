#pragma once
/// @file ProcessMemory.hpp
/// This process's resident memory from /proc/self/status (the master's bytes per
/// task, `treefarm bench memory`).

#include <cstdint>

namespace treefarm::metrics {

/// Resident set now and its peak so far, bytes (VmRSS and VmHWM), and the part of the
/// resident set that is shared memory (RssShmem: the task inputs' segments of a parent's
/// local children, runtime/zmq/SharedInputs.hpp); 0 when unknown.
struct ProcessMemory {
  std::uint64_t rss_bytes = 0;
  std::uint64_t peak_rss_bytes = 0;
  std::uint64_t shmem_bytes = 0;
};

/// Reads /proc/self/status. Never throws: unknown fields stay 0.
ProcessMemory process_memory();

/// seconds of CPU (user + system) this process used so far (getrusage), 0 when unknown.
double process_cpu_seconds();

}  // namespace treefarm::metrics
