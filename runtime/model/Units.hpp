#pragma once
/// @file Units.hpp
/// Quantities written with a unit, following SimGrid's platform-file conventions
/// (https://simgrid.org/doc/latest/Platform_units.html). Units are case-sensitive:
/// "b" is a bit and "B" a byte, "M" is mega and "m" milli (times only).
///
/// A number is written immediately before its unit, optionally separated by spaces:
/// "2Gf", "1.5 ms", "125MBps". Decimal prefixes are k (1e3), M, G, T, P, E; binary
/// prefixes (bandwidths and sizes only) are Ki (2^10), Mi, Gi, Ti, Pi, Ei. Values must be
/// finite and >= 0. A string without a unit is rejected: plain numbers belong in TOML
/// numbers, which are in base units (flop/s, bytes/s, seconds, bytes).

#include <cstdint>
#include <string_view>

namespace treefarm::model {

/// Parses a computing speed and returns flop/s. Units: "f" or "flops", with a decimal
/// prefix: "100Mf", "2Gf", "1.5kf", "2Gflops". Throws std::invalid_argument.
double parse_speed(std::string_view text);

/// Parses an amount of work and returns flop. Same units as parse_speed ("f" counts
/// flop here): "2Gf", "1.5Mflops". Throws std::invalid_argument.
double parse_flops(std::string_view text);

/// Parses a bandwidth and returns bytes/s. Units: "Bps" (bytes/s) and "bps" (bits/s,
/// divided by 8), with a decimal or binary prefix: "125MBps", "1Gbps", "110kbps",
/// "10MiBps". Throws std::invalid_argument.
double parse_bandwidth(std::string_view text);

/// Parses a duration and returns seconds. Units: "ns", "us", "ms", "s", "m" (minute),
/// "h" (hour): "50us", "1ms", "2s". Throws std::invalid_argument.
double parse_time(std::string_view text);

/// Parses a size and returns bytes. Units: "B" with a decimal or binary prefix:
/// "100B", "4KiB", "1GB", "512MiB". The result must be a whole number of bytes below
/// 2^63. Throws std::invalid_argument.
std::uint64_t parse_size(std::string_view text);

}  // namespace treefarm::model
