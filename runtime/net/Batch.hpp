#pragma once
/// @file Batch.hpp
/// Batch frames: several protocol messages in one frame, so that a node answering many
/// small messages in one turn of its loop pays one socket operation, not one per message
/// (dispatch near the transport's rate). Pure: no sockets.
///
/// Layout (little-endian, docs/protocol.md "Batch frames"):
///   u32 batch_magic, u16 wire_version, u16 reserved (0), u32 count, then `count` entries:
///   u32 header_length, the message's header frame (Codec.hpp), and, for kinds with a
///   payload (Task, Probe), u32 payload_length and the payload bytes, or, for a payload in
///   the shared-memory segment the receiver accepted from this sender
///   (runtime/zmq/SharedInputs.hpp), u32 shared_payload_mark, u64 offset, u32 length.
/// A node sends batch frames only to a peer whose Hello or Welcome carried
/// msg::feature_batches; every entry is decoded with the same checks as a lone frame.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/net/Codec.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::net {

constexpr std::uint32_t batch_magic = 0x42524654;          ///< "TFRB" little-endian
constexpr std::size_t batch_header_bytes = 12;
constexpr std::size_t max_batch_entries = 4096;
constexpr std::size_t max_batch_bytes = 1u << 20;          ///< bytes, one batch frame
constexpr std::size_t max_batched_payload_bytes = 16 * 1024; ///< bytes; bigger payloads travel alone, zero-copy
/// payload_length of an entry whose payload lies in the receiver's shared input segment.
constexpr std::uint32_t shared_payload_mark = 0xFFFFFFFF;
/// bytes: a shared entry's reference to its input (the mark, the offset and the length).
constexpr std::uint64_t shared_reference_bytes = 4 + 8 + 4;

/// Accumulates messages for one peer; take() returns the frame and starts a new one.
class BatchWriter {
 public:
  BatchWriter();
  /// Whether `m` with a payload of `payload_bytes` may go in a batch at all.
  static bool batchable(const Message& m, std::size_t payload_bytes);
  /// Appends `m` (and its payload for Task/Probe). Returns false, leaving the batch
  /// unchanged, when it would exceed max_batch_entries or max_batch_bytes.
  bool add(const Message& m, std::span<const std::byte> payload = {});
  /// As add() for a Task/Probe whose payload of `payload_bytes` bytes the caller writes
  /// into the returned span (inside the frame) before the next call: no copy of bytes
  /// made elsewhere. nullopt, the batch unchanged, when it would exceed a limit.
  std::optional<std::span<std::byte>> add_room(const Message& m, std::size_t payload_bytes);
  /// As add() for a Task whose payload of `length` bytes (1 or more) the receiver reads at
  /// `offset` in the shared input segment it accepted from this sender. False, the batch
  /// unchanged, when it would exceed a limit.
  bool add_shared(const Message& m, std::uint64_t offset, std::uint32_t length);
  std::size_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  /// The frame of the messages added since the last take(); the writer is empty after
  /// and holds no room of its own until its next message (a peer that receives nothing
  /// costs its sender no frame-sized buffer).
  /// Its bytes are exactly those written: no zero-fill under the payloads (FrameBuffer).
  FrameBuffer take();
  /// Bytes of room the writer holds now (its buffer's capacity).
  std::size_t held_bytes() const { return bytes_.capacity(); }
  /// Bytes of room a new batch starts with: the largest of this writer's last
  /// `recent_frames` frames, so a batch as large as those grows in place and is not moved
  /// while it fills (at most max_batch_bytes; a peer whose frames shrank gets less room).
  std::size_t expected_bytes() const;
  static constexpr std::size_t recent_frames = 16;

 private:
  void reset();
  /// Appends `m`'s entry, with room for `payload_bytes` when `with_payload`; false when full.
  bool append(const Message& m, bool with_payload, std::size_t payload_bytes, bool shared = false);
  FrameBuffer bytes_;
  std::size_t count_ = 0;
  std::array<std::uint32_t, recent_frames> recent_{};  ///< bytes of the last frames taken
  std::size_t taken_ = 0;                              ///< frames taken so far
};

/// One message of a decoded batch; its payload (if the kind has one) is
/// frame[payload_offset, payload_offset + payload_size), or, when `in_segment`, those
/// bytes of the receiver's shared input segment (checked against it by the transport).
struct BatchEntry {
  Message message;
  bool has_payload = false;
  bool in_segment = false;
  std::size_t payload_offset = 0;
  std::size_t payload_size = 0;
};

/// Whether a frame starts like a batch frame (its magic).
bool is_batch_frame(std::span<const std::byte> frame);

/// Decodes a whole batch frame; throws DecodeError naming the entry and what was wrong.
std::vector<BatchEntry> decode_batch(std::span<const std::byte> frame);

}  // namespace treefarm::net
