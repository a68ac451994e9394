#pragma once
/// @file CodecBench.hpp
/// `treefarm bench codec`: the hand-written wire codec of runtime/net (net::encode,
/// net::decode) beside the same messages in MessagePack (msgpack-cxx, Debian's
/// libmsgpack-cxx-dev), measured side by side in one run: nanoseconds per encode and per
/// checked decode, and bytes per header frame, for the two messages of the per-task path
/// (Task down the tree, Result up). The figures say whether a maintained serialization
/// library would cost the hot path anything (docs/benchmarks.md, "Codec").
///
/// The MessagePack side is a complete codec of those two messages, with the checks of
/// ours: an array [magic, version, kind, fields...] whose length, types, string sizes
/// (net::max_name_bytes) and finite numbers are checked on decoding.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

#include "runtime/net/Codec.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::bench {

struct CodecBenchOptions {
  std::uint64_t messages = 200000;  ///< Encodes (and decodes) per measurement, >= 1.
  std::uint32_t rounds = 5;         ///< Measurements per figure (median reported), >= 1.
  bool json = false;                ///< JSON instead of text.
};

/// Prints, for Task and Result, each codec's median ns per encode, ns per decode and
/// bytes per header frame, and the ratio MessagePack / ours. Every decoded message is
/// compared with the one encoded. @return 0.
/// @throws std::invalid_argument for a zero option; std::runtime_error if a decoded
///         message differs from the encoded one.
int bench_codec(std::ostream& out, const CodecBenchOptions& options);

/// The MessagePack codec of the benchmark (exposed for its tests).
std::vector<char> msgpack_encode(const net::msg::Task& task);
std::vector<char> msgpack_encode(const net::msg::Result& result);
/// Decodes what msgpack_encode made; throws net::DecodeError naming what was wrong.
net::msg::Task msgpack_decode_task(std::span<const char> bytes);
net::msg::Result msgpack_decode_result(std::span<const char> bytes);

}  // namespace treefarm::bench
