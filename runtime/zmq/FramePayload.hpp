#pragma once
/// @file FramePayload.hpp
/// Task payloads and ZeroMQ frames without copies, for the ZeroMQ adapter (ZmqNode.cpp):
/// a received frame shared as a node payload, a payload sent as a frame, the payloads of
/// a batch frame as views into it.

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "runtime/net/Batch.hpp"
#include "runtime/net/DecodeError.hpp"
#include "runtime/zmq/MadeBytes.hpp"
#include "runtime/zmq/SharedInputs.hpp"
#include "runtime/node/Payload.hpp"
#include "runtime/zmq/Wire.hpp"

namespace treefarm::zmq_node {

/// A received frame as a node payload: shared, never copied.
class FrameBytes final : public node::Bytes {
 public:
  explicit FrameBytes(zmq::message_t frame) : frame_(std::move(frame)) {}
  const std::byte* data() const override { return static_cast<const std::byte*>(frame_.data()); }
  std::size_t size() const override { return frame_.size(); }

 private:
  zmq::message_t frame_;
};

/// A frame over a node payload, without copying: ZeroMQ holds a reference until sent.
inline zmq::message_t frame_of(const node::Payload& payload) {
  if (!payload || payload->size() == 0) return zmq::message_t();
  auto* holder = new node::Payload(payload);
  auto* data = const_cast<std::byte*>((*holder)->data());
  return zmq::message_t(data, (*holder)->size(), [](void*, void* hint) { delete static_cast<node::Payload*>(hint); },
                        holder);
}

/// A received batch frame and a view of each payload inside it: one allocation per frame,
/// none per payload; each payload shares the frame's count (node::SliceBytes),
/// so the frame lives as long as its last payload. A payload in the shared input segment
/// (BatchEntry::in_segment) is a view into `mapping` instead, which lives as long too: read
/// in place, in a copied segment as in one sized for the buffer, until the task's Result
/// (or PullReply) goes up. (Copying each input out as its batch arrived put up to 16 MiB of
/// fresh anonymous memory per worker into the timed dispatch of `bench workers`: 95,000 of
/// its 116,000 first touches of pages; when this VM's first touches turned ~30x dearer, the
/// workers' clear_page took ~1.3 CPU-seconds of the run and the master's CPU with them.)
struct SharedBatch {
  zmq::message_t frame;
  std::shared_ptr<InputMapping> mapping;
  std::vector<node::SliceBytes> views;  ///< one per entry (empty for an entry without payload)

  /// Payloads of the entries of `b`, which it takes the frame of. `mapping`: the segment
  /// accepted from the sender (null: none, and a reference into one is a DecodeError); each
  /// reference is claimed there for its task (InputMapping::claim: DecodeError when outside
  /// the segment or over a slot still held).
  static std::shared_ptr<SharedBatch> of(net::ReceivedBatch& b, std::shared_ptr<InputMapping> mapping = nullptr) {
    auto shared = std::make_shared<SharedBatch>();
    shared->frame = std::move(b.frame);
    shared->views.resize(b.entries.size());
    const auto* base = static_cast<const std::byte*>(shared->frame.data());
    for (std::size_t i = 0; i < b.entries.size(); ++i) {
      const auto& e = b.entries[i];
      if (!e.has_payload) continue;
      if (!e.in_segment) {
        shared->views[i] = node::SliceBytes(base + e.payload_offset, e.payload_size);
        continue;
      }
      if (!mapping) throw net::DecodeError("a reference into a shared input segment, but none was accepted from this sender");
      const auto bytes = mapping->claim(std::get<net::msg::Task>(e.message).task_id, SlotRef{e.payload_offset, e.payload_size});
      shared->views[i] = node::SliceBytes(bytes.data(), bytes.size());
    }
    shared->mapping = std::move(mapping);
    return shared;
  }
  /// As of(), null and `bad` saying why where of() throws DecodeError: the sender is to be dropped.
  static std::shared_ptr<SharedBatch> checked(net::ReceivedBatch& b, std::shared_ptr<InputMapping> mapping, std::string& bad) {
    try {
      return of(b, std::move(mapping));
    } catch (const net::DecodeError& e) {
      bad = e.what();
      return nullptr;
    }
  }
  /// The payload of entry `i` (null when it has none).
  static node::Payload payload(const std::shared_ptr<SharedBatch>& batch, std::size_t i, bool has_payload) {
    return has_payload ? node::Payload(batch, &batch->views[i]) : node::Payload();
  }
};

inline std::span<const std::byte> bytes_of(const node::Payload& payload) {
  if (!payload || payload->size() == 0) return {};
  return {payload->data(), payload->size()};
}

/// Adds `message` and its payload to `batch`; a payload made on demand (zmq_node::MadeBytes:
/// the master's inputs) is made straight into the frame instead of copied into it. False,
/// the batch unchanged, when it is full.
inline bool add_to(net::BatchWriter& batch, const net::Message& message, const node::Payload& payload) {
  const auto* made = dynamic_cast<const zmq_node::MadeBytes*>(payload.get());
  if (!made || net::payload_frames_of(message) != 1) return batch.add(message, bytes_of(payload));
  const auto room = batch.add_room(message, made->size());
  if (room) made->write_to(*room);
  return room.has_value();
}

/// As add_to, for a child whose shared input segment is `segment` (null: none accepted): a
/// Task's input made on demand is made straight into a slot of the segment, taken for that
/// task until InputSegment::release, and the entry carries only (offset, length), whatever
/// the input's size. A full ring, or any other payload, goes as add_to would (inline).
/// False, the batch and the segment unchanged, when the batch is full.
inline bool add_to(net::BatchWriter& batch, const net::Message& message, const node::Payload& payload, InputSegment* segment) {
  if (!segment) return add_to(batch, message, payload);  // the per-task path without a segment: one cast, in add_to
  const auto* task = std::get_if<net::msg::Task>(&message);
  const auto* made = task ? dynamic_cast<const zmq_node::MadeBytes*>(payload.get()) : nullptr;
  if (task && payload && payload->size() > net::max_batched_payload_bytes) {
    // Too large for a batch (SharedInputLinks::batchable): by reference in a slot, written
    // there once (made) or copied from its buffer — the child reads it in place, where a
    // frame of its own cost the kernel two copies; no slot free: false, it goes alone.
    const auto slot = payload->size() < net::shared_payload_mark ? segment->take(task->task_id, payload->size()) : std::nullopt;
    if (!slot) return false;
    if (made) made->write_to(segment->bytes(*slot));
    else std::memcpy(segment->bytes(*slot).data(), payload->data(), payload->size());
    if (batch.add_shared(message, slot->offset, static_cast<std::uint32_t>(slot->length))) return true;
    segment->release(task->task_id);
    return false;
  }
  if (made && made->size() > 0 && made->size() < net::shared_payload_mark) {
    if (const auto slot = segment->take(task->task_id, made->size())) {
      made->write_to(segment->bytes(*slot));
      if (batch.add_shared(message, slot->offset, static_cast<std::uint32_t>(slot->length))) return true;
      segment->release(task->task_id);
      return false;
    }
  }
  return add_to(batch, message, payload);
}

}  // namespace treefarm::zmq_node
