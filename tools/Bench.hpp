#pragma once
/// @file Bench.hpp
/// `treefarm bench ...`: figures measured side by side in one run.

#include <ostream>

namespace treefarm::tools {

/// No-op tasks from the master through one worker on loopback (tasks/s), beside the raw
/// ZeroMQ one-way message rate (messages/s) over TCP loopback, measured in the same run.
int bench_dispatch(std::ostream& out, std::uint64_t tasks, std::uint64_t payload_bytes, std::uint32_t buffer, bool json);

}  // namespace treefarm::tools
