#pragma once
/// @file LinkProbe.hpp
/// Measures the rate an emulated link really gives TCP: a sender and a receiver thread,
/// each moved into one end's network namespace with setns(2) (a per-thread property),
/// stream bytes across the veth pair.

#include <cstdint>

#include "tools/emulate/Platform.hpp"

namespace treefarm::emulate {

/// Direction of a link probe: down = parent → child (the way tasks go), up = child → parent.
enum class Direction { down, up };

/// Sends `bytes` (>= 64 KiB) over one TCP connection across the link between node
/// `child_node` and its parent and returns the payload rate at the receiver in bytes/s,
/// over the bytes after the first 10 % (leaving out slow start and the token bucket's
/// initial burst). TCP payload is about 0.96 of what tbf counts (headers), so a link
/// shaped to R bytes/s measures about 0.96 R. Throws std::invalid_argument for the master
/// or too few bytes, std::runtime_error if a socket call fails or no byte moves for 15 s.
double measure_link(const Platform& platform, std::size_t child_node, std::uint64_t bytes,
                    Direction direction = Direction::down);

}  // namespace treefarm::emulate
