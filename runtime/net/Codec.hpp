#pragma once
/// @file Codec.hpp
/// Encoding and checked decoding of header frames. Pure: no sockets. Every field that
/// comes from the network is checked here, once (magic, version, kind, lengths, frame
/// count, string and list sizes, trailing bytes); anything wrong is a DecodeError.

#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

#include "runtime/net/DecodeError.hpp"
#include "runtime/net/FrameBuffer.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::net {

/// The header frame of `m` (header + body), little-endian.
std::vector<std::byte> encode(const Message& m);
/// The same, appended to `out` (a batch frame being built); on a throw `out` is as before.
void encode_into(const Message& m, std::vector<std::byte>& out);
/// The same, appended to a batch frame being built (Batch.hpp).
void encode_into(const Message& m, FrameBuffer& out);

/// Payload frames that always follow a message of kind k (1 for Task, Probe, TreeInfo,
/// else 0).
std::size_t payload_frames_for(Kind k);
/// Payload frames that follow `m`: payload_frames_for its kind, and 1 for a Result that
/// carries its output (msg::Result::has_output).
std::size_t payload_frames_of(const Message& m);

/// Decodes a header frame; `payload_frames` is how many frames followed it on the wire.
/// Throws DecodeError naming what was wrong.
Message decode(std::span<const std::byte> header_frame, std::size_t payload_frames);

}  // namespace treefarm::net
