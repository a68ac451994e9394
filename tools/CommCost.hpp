#pragma once
/// @file CommCost.hpp
/// The CPU cost of moving bytes between two processes of one machine over the tree's
/// transport (ZeroMQ over loopback TCP, CURVE when the tree is encrypted): what the
/// host-aware LP charges per byte a node sends or receives (docs/lp.md "Hosts").

#include <cstdint>

namespace treefarm::tools {

/// A measured CPU cost of communication.
struct CommCost {
  double cpu_seconds_per_byte = 0;  ///< CPU seconds (sender + receiver + I/O threads) per byte moved, median.
  double spread = 0;                ///< (max - min) / median over the repetitions.
  double bytes_per_second = 0;      ///< Wall-clock rate of the median repetition, bytes/s.
  int repetitions = 0;
};

/// Streams `message_bytes`-byte messages (zero-copy, as the runtime sends payloads) from
/// one ZeroMQ socket to another over tcp://127.0.0.1 for about `seconds_per_rep` seconds,
/// `repetitions` times, and divides the process CPU time spent (CLOCK_PROCESS_CPUTIME_ID:
/// both ends and their I/O threads) by the bytes received. `curve`: CURVE-encrypted.
/// Throws std::runtime_error if ZeroMQ fails.
CommCost measure_comm_cost(std::uint64_t message_bytes, bool curve, int repetitions = 5,
                           double seconds_per_rep = 0.2);

}  // namespace treefarm::tools
