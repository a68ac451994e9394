#include "runtime/net/Batch.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace treefarm::net {

namespace {
template <class T>
void put(FrameBuffer& out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

template <class T>
void poke(FrameBuffer& out, std::size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <class T>
T take_from(std::span<const std::byte> frame, std::size_t& pos, const char* what, std::int64_t entry = -1) {
  // The message is built only on failure (a string per entry was an allocation
  // per message received).
  if (frame.size() - pos < sizeof(T))
    throw DecodeError("batch frame truncated at " + (entry >= 0 ? "entry " + std::to_string(entry) + " " : std::string()) + what);
  T v;
  std::memcpy(&v, frame.data() + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}
}  // namespace

BatchWriter::BatchWriter() { reset(); }

void BatchWriter::reset() {
  bytes_.clear();
  count_ = 0;
  put(bytes_, batch_magic);
  put(bytes_, wire_version);
  put<std::uint16_t>(bytes_, 0);
  put<std::uint32_t>(bytes_, 0);  // count, written by take()
}

bool BatchWriter::batchable(const Message& m, std::size_t payload_bytes) {
  return payload_frames_of(m) == 0 || payload_bytes <= max_batched_payload_bytes;
}

bool BatchWriter::add(const Message& m, std::span<const std::byte> payload) {
  if (payload_frames_of(m) != 1) {
    if (!payload.empty()) throw std::invalid_argument("a payload given for a message without one");
    return append(m, false, 0);
  }
  const auto room = add_room(m, payload.size());
  if (room && !payload.empty()) std::memcpy(room->data(), payload.data(), payload.size());
  return room.has_value();
}

std::optional<std::span<std::byte>> BatchWriter::add_room(const Message& m, std::size_t payload_bytes) {
  if (payload_frames_of(m) != 1) throw std::invalid_argument("room for a payload asked for a message without one");
  if (!append(m, true, payload_bytes)) return std::nullopt;
  return std::span<std::byte>(bytes_.data() + bytes_.size() - payload_bytes, payload_bytes);
}

bool BatchWriter::add_shared(const Message& m, std::uint64_t offset, std::uint32_t length) {
  if (!std::holds_alternative<msg::Task>(m)) throw std::invalid_argument("a shared payload given for a message other than a Task");
  if (length == 0 || length == shared_payload_mark) throw std::invalid_argument("a shared payload of 0 or 2^32-1 bytes");
  if (!append(m, true, 0, true)) return false;
  put(bytes_, offset);
  put(bytes_, length);
  return true;
}

bool BatchWriter::append(const Message& m, bool with_payload, std::size_t payload_bytes, bool shared) {
  if (count_ >= max_batch_entries) return false;
  // A batch's first message reserves the room its frame is expected to reach: growing by
  // doubling moved the frame (inputs and all) several times while it filled.
  if (count_ == 0) {
    if (const auto expected = expected_bytes(); bytes_.capacity() < expected) bytes_.reserve(expected);
  }
  // Encoded in place after its length (no buffer of its own per message).
  const std::size_t start = bytes_.size();
  put<std::uint32_t>(bytes_, 0);
  try {
    encode_into(m, bytes_);
  } catch (...) {
    bytes_.resize(start);
    throw;
  }
  const std::size_t header = bytes_.size() - start - 4;
  const std::size_t after = with_payload ? 4 + (shared ? 12 : payload_bytes) : 0;
  if (bytes_.size() + after > max_batch_bytes) {
    bytes_.resize(start);
    if (count_ == 0) throw std::invalid_argument("a message too large for a batch frame");
    return false;
  }
  poke(bytes_, start, static_cast<std::uint32_t>(header));
  if (shared) {
    put(bytes_, shared_payload_mark);  // the caller appends the offset and length
  } else if (with_payload) {
    put(bytes_, static_cast<std::uint32_t>(payload_bytes));
    bytes_.resize(bytes_.size() + payload_bytes);  // not zero-filled: written by the caller (add, add_room)
  }
  ++count_;
  return true;
}

FrameBuffer BatchWriter::take() {
  poke(bytes_, 8, static_cast<std::uint32_t>(count_));
  FrameBuffer out = std::move(bytes_);
  recent_[taken_++ % recent_frames] = static_cast<std::uint32_t>(std::min(out.size(), max_batch_bytes));
  bytes_ = {};  // no room held while idle: reserved by the next batch's first message
  reset();
  return out;
}

std::size_t BatchWriter::expected_bytes() const {
  return *std::max_element(recent_.begin(), recent_.end());
}

bool is_batch_frame(std::span<const std::byte> frame) {
  std::uint32_t magic = 0;
  if (frame.size() < sizeof magic) return false;
  std::memcpy(&magic, frame.data(), sizeof magic);
  return magic == batch_magic;
}

std::vector<BatchEntry> decode_batch(std::span<const std::byte> frame) {
  if (frame.size() > max_batch_bytes)
    throw DecodeError("batch frame of " + std::to_string(frame.size()) + " bytes, limit " + std::to_string(max_batch_bytes));
  std::size_t pos = 0;
  if (take_from<std::uint32_t>(frame, pos, "magic") != batch_magic) throw DecodeError("bad magic: not a batch frame");
  const auto version = take_from<std::uint16_t>(frame, pos, "version");
  if (version != wire_version)
    throw DecodeError("batch of protocol version " + std::to_string(version) + ", this node speaks " + std::to_string(wire_version));
  if (take_from<std::uint16_t>(frame, pos, "reserved") != 0) throw DecodeError("reserved batch field is not zero");
  const auto count = take_from<std::uint32_t>(frame, pos, "count");
  if (count == 0 || count > max_batch_entries)
    throw DecodeError("batch of " + std::to_string(count) + " messages, expected 1 to " + std::to_string(max_batch_entries));
  std::vector<BatchEntry> entries;
  entries.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto where = [i] { return "entry " + std::to_string(i); };
    const auto header_len = take_from<std::uint32_t>(frame, pos, "header_length", i);
    if (frame.size() - pos < header_len) throw DecodeError("batch frame truncated in " + where() + "'s header");
    const auto header = frame.subspan(pos, header_len);
    pos += header_len;
    // The header's payload_frames field says whether a payload follows (a Result may carry
    // its output); decode() then checks it against the kind and the body.
    std::uint16_t declared = 0;
    if (header_len >= header_bytes) std::memcpy(&declared, header.data() + 12, sizeof declared);
    const bool with_payload = declared == 1;
    BatchEntry e;
    try {
      e.message = decode(header, declared);
    } catch (const DecodeError& err) {
      throw DecodeError(where() + ": " + err.what());
    }
    if (with_payload) {
      const auto n = take_from<std::uint32_t>(frame, pos, "payload_length", i);
      if (n == shared_payload_mark) {
        if (!std::holds_alternative<msg::Task>(e.message)) throw DecodeError(where() + ": a shared payload for a message other than a Task");
        e.payload_offset = take_from<std::uint64_t>(frame, pos, "shared offset", i);
        e.payload_size = take_from<std::uint32_t>(frame, pos, "shared length", i);
        if (e.payload_size == 0) throw DecodeError(where() + ": a shared payload of 0 bytes");
        e.has_payload = e.in_segment = true;
        entries.push_back(std::move(e));
        continue;
      }
      if (frame.size() - pos < n) throw DecodeError("batch frame truncated in " + where() + "'s payload");
      e.has_payload = true;
      e.payload_offset = pos;
      e.payload_size = n;
      pos += n;
    }
    entries.push_back(std::move(e));
  }
  if (pos != frame.size()) throw DecodeError("batch frame has " + std::to_string(frame.size() - pos) + " trailing bytes");
  return entries;
}

}  // namespace treefarm::net
