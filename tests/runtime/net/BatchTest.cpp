/// Tests of runtime/net/Batch: messages round-trip through a batch frame in order, with
/// their payloads; every malformed batch is a DecodeError naming what was wrong; the
/// writer keeps to its limits. (On real sockets: tests/runtime/zmq/WireTest.cpp.)

#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/net/Batch.hpp"

namespace treefarm::net {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<std::byte>;

Bytes bytes_of(const std::string& s) {
  Bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::string text_at(std::span<const std::byte> frame, const BatchEntry& e) {
  return std::string(reinterpret_cast<const char*>(frame.data() + e.payload_offset), e.payload_size);
}

TEST(Batch, MessagesAndPayloadsRoundTripInOrder) {
  BatchWriter w;
  EXPECT_TRUE(w.empty());
  const Bytes input = bytes_of("sixteen bytes!!!");
  ASSERT_TRUE(w.add(msg::Task{41}, input));
  ASSERT_TRUE(w.add(msg::Result{7, "w1", 0.5, 0.25, 12.5, false, ""}));
  ASSERT_TRUE(w.add(msg::Request{3}));
  ASSERT_TRUE(w.add(msg::Task{42}, {}));  // an empty payload is still a payload
  EXPECT_EQ(w.count(), 4u);
  const auto frame = w.take();
  EXPECT_TRUE(w.empty());
  ASSERT_TRUE(is_batch_frame(frame));
  const auto entries = decode_batch(frame);
  ASSERT_EQ(entries.size(), 4u);
  ASSERT_TRUE(std::holds_alternative<msg::Task>(entries[0].message));
  EXPECT_EQ(std::get<msg::Task>(entries[0].message).task_id, 41u);
  ASSERT_TRUE(entries[0].has_payload);
  EXPECT_EQ(text_at(frame, entries[0]), "sixteen bytes!!!");
  const auto& r = std::get<msg::Result>(entries[1].message);
  EXPECT_EQ(r.task_id, 7u);
  EXPECT_EQ(r.node, "w1");
  EXPECT_DOUBLE_EQ(r.checksum, 12.5);
  EXPECT_FALSE(entries[1].has_payload);
  EXPECT_EQ(std::get<msg::Request>(entries[2].message).count, 3u);
  EXPECT_TRUE(entries[3].has_payload);
  EXPECT_EQ(entries[3].payload_size, 0u);
  // The writer starts over after take().
  ASSERT_TRUE(w.add(msg::Heartbeat{}));
  EXPECT_EQ(decode_batch(w.take()).size(), 1u);
}

TEST(Batch, EveryKindWithAPayloadFrameTravelsInABatch) {
  // A TreeInfo advertisement (child -> parent after Welcome) has an empty payload frame.
  BatchWriter w;
  msg::TreeInfo advert;
  advert.name = "w1";
  advert.endpoint = "tcp://127.0.0.1:5556";
  ASSERT_TRUE(w.add(advert, {}));
  ASSERT_TRUE(w.add(msg::Probe{9}, bytes_of("xy")));
  const auto entries = decode_batch(w.take());
  ASSERT_EQ(entries.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<msg::TreeInfo>(entries[0].message));
  EXPECT_EQ(std::get<msg::TreeInfo>(entries[0].message).endpoint, "tcp://127.0.0.1:5556");
  EXPECT_TRUE(entries[0].has_payload);
  EXPECT_EQ(entries[1].payload_size, 2u);
}

TEST(Batch, AnOrdinaryFrameIsNotABatch) {
  EXPECT_FALSE(is_batch_frame(encode(msg::Heartbeat{})));
  EXPECT_FALSE(is_batch_frame(Bytes{}));
  EXPECT_THROW((void)decode_batch(encode(msg::Heartbeat{})), DecodeError);
}

TEST(Batch, WriterKeepsToItsLimits) {
  EXPECT_TRUE(BatchWriter::batchable(msg::Request{1}, 0));
  EXPECT_TRUE(BatchWriter::batchable(msg::Task{1}, max_batched_payload_bytes));
  EXPECT_FALSE(BatchWriter::batchable(msg::Task{1}, max_batched_payload_bytes + 1));
  BatchWriter w;
  std::size_t added = 0;
  while (w.add(msg::Request{1})) ++added;
  EXPECT_EQ(added, max_batch_entries);
  EXPECT_EQ(decode_batch(w.take()).size(), max_batch_entries);
  const Bytes big(max_batched_payload_bytes);
  std::size_t tasks = 0;
  while (w.add(msg::Task{tasks}, big)) ++tasks;
  EXPECT_GT(tasks, 0u);
  const auto frame = w.take();
  EXPECT_LE(frame.size(), max_batch_bytes);
  EXPECT_EQ(decode_batch(frame).size(), tasks);
  EXPECT_THROW((void)w.add(msg::Request{1}, big), std::invalid_argument);  // a payload for a kind without one
}

TEST(Batch, RoomForAPayloadIsWrittenInPlaceAndGivesTheFrameAddWould) {
  BatchWriter by_room, by_copy;
  const Bytes input = bytes_of("made in the frame");
  auto room = by_room.add_room(msg::Task{5}, input.size());
  ASSERT_TRUE(room);
  ASSERT_EQ(room->size(), input.size());
  std::memcpy(room->data(), input.data(), input.size());
  ASSERT_TRUE(by_room.add(msg::Request{2}));
  ASSERT_TRUE(by_copy.add(msg::Task{5}, input));
  ASSERT_TRUE(by_copy.add(msg::Request{2}));
  const auto frame = by_room.take();
  EXPECT_EQ(frame, by_copy.take());
  const auto entries = decode_batch(frame);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(text_at(frame, entries[0]), "made in the frame");
  // Full: nothing is added, the batch is unchanged; a kind without a payload has no room.
  std::size_t tasks = 0;
  while (by_room.add_room(msg::Task{tasks}, max_batched_payload_bytes)) ++tasks;
  EXPECT_EQ(decode_batch(by_room.take()).size(), tasks);
  EXPECT_THROW((void)by_room.add_room(msg::Request{1}, 4), std::invalid_argument);
  EXPECT_TRUE(by_room.empty());
}

TEST(Batch, AFramesBytesAreExactlyThoseWrittenThoughItsRoomIsNotZeroFilled) {
  // The room of a payload is not zero-filled (FrameBuffer): frames made one after another
  // in reused memory hold each payload as written and nothing of an earlier frame, byte
  // for byte the frame add() makes by copying.
  BatchWriter by_room, by_copy;
  const std::size_t input = 16 * 1024;
  for (int round = 0; round < 4; ++round) {
    const std::size_t tasks = round % 2 == 0 ? 60 : 3;
    for (std::size_t i = 0; i < tasks; ++i) {
      const Bytes made(input, std::byte{static_cast<unsigned char>(round * 61 + i)});
      auto room = by_room.add_room(msg::Task{i}, input);
      ASSERT_TRUE(room);
      std::memcpy(room->data(), made.data(), input);
      ASSERT_TRUE(by_copy.add(msg::Task{i}, made));
    }
    ASSERT_TRUE(by_room.add(msg::Request{2}));
    ASSERT_TRUE(by_copy.add(msg::Request{2}));
    const auto frame = by_room.take();
    const auto entries = decode_batch(frame);
    ASSERT_EQ(entries.size(), tasks + 1);
    for (std::size_t i = 0; i < tasks; ++i)
      EXPECT_EQ(text_at(frame, entries[i]), std::string(input, static_cast<char>(round * 61 + i))) << "round " << round << ", task " << i;
    EXPECT_EQ(frame, by_copy.take()) << "round " << round;
  }
}

/// A batch of two Tasks, to be broken in the tests below.
Bytes two_tasks() {
  BatchWriter w;
  const Bytes p = bytes_of("abcd");
  w.add(msg::Task{1}, p);
  w.add(msg::Task{2}, p);
  const auto frame = w.take();
  return Bytes(frame.begin(), frame.end());
}

void expect_bad(const Bytes& frame, const std::string& what) {
  try {
    (void)decode_batch(frame);
    ADD_FAILURE() << "decoded a batch that should be bad (" << what << ")";
  } catch (const DecodeError& e) {
    EXPECT_THAT(e.what(), HasSubstr(what));
  }
}

TEST(Batch, AFrameFillsInPlaceAfterASmallOneAndAnIdleWriterHoldsNoRoom) {
  // The master's batches to a worker alternate between full frames of inputs and small
  // ones; a full frame after a small one must not be moved (its inputs copied again)
  // while it fills, and a writer waiting for its next message holds no frame of room.
  BatchWriter w;
  const std::size_t input = 16 * 1024;
  const auto fill = [&](std::size_t tasks) {
    std::byte* first = nullptr;
    for (std::size_t i = 0; i < tasks; ++i) {
      auto room = w.add_room(msg::Task{i}, input);
      EXPECT_TRUE(room.has_value());
      if (!room) break;
      if (i == 0) first = room->data();
    }
    return first;
  };
  (void)fill(60);
  const auto big = w.take();
  EXPECT_LT(w.held_bytes(), std::size_t{64}) << "an idle writer keeps no room of a frame's size";
  (void)fill(1);
  const auto small = w.take();
  EXPECT_LT(w.held_bytes(), std::size_t{64});
  EXPECT_EQ(w.expected_bytes(), big.size());
  EXPECT_LE(w.expected_bytes(), max_batch_bytes);
  std::byte* first = fill(60);
  const auto again = w.take();
  ASSERT_EQ(again.size(), big.size());
  // The first input's room is still where the frame holds it: the frame was never moved.
  const auto entries = decode_batch(again);
  ASSERT_EQ(entries.size(), 60u);
  EXPECT_EQ(again.data() + entries[0].payload_offset, first);
  EXPECT_EQ(decode_batch(small).size(), 1u);
  // Once its last frames were all small, a writer reserves only what they needed.
  for (std::size_t i = 0; i < BatchWriter::recent_frames; ++i) {
    (void)fill(1);
    (void)w.take();
  }
  EXPECT_EQ(w.expected_bytes(), small.size());
}

TEST(Batch, EveryMalformedBatchIsRefusedNamingWhatWasWrong) {
  const Bytes good = two_tasks();
  ASSERT_EQ(decode_batch(good).size(), 2u);
  Bytes b = good;
  b[4] = std::byte{99};  // version
  expect_bad(b, "protocol version");
  b = good;
  b[6] = std::byte{1};  // reserved
  expect_bad(b, "reserved");
  b = good;
  std::uint32_t count = 0;
  std::memcpy(b.data() + 8, &count, 4);
  expect_bad(b, "batch of 0 messages");
  count = 3;
  std::memcpy(b.data() + 8, &count, 4);
  expect_bad(b, "truncated");
  b = good;
  b.push_back(std::byte{0});
  expect_bad(b, "trailing bytes");
  b = good;
  b.resize(b.size() - 2);
  expect_bad(b, "entry 1's payload");
  b = good;
  b[batch_header_bytes + 4 + 6] = std::byte{99};  // first entry's kind
  expect_bad(b, "entry 0: unknown message kind 99");
  b = good;
  std::uint32_t huge = 1u << 30;
  std::memcpy(b.data() + batch_header_bytes, &huge, 4);  // first entry's header length
  expect_bad(b, "entry 0's header");
}

TEST(Batch, ATasksPayloadInTheSharedSegmentTravelsAsAReference) {
  BatchWriter w;
  ASSERT_TRUE(w.add(msg::Task{41}, bytes_of("inline")));
  ASSERT_TRUE(w.add_shared(msg::Task{42}, 4096, 16384));
  EXPECT_THROW(w.add_shared(msg::Result{7, "w1", 0, 0, 0, false, ""}, 0, 1), std::invalid_argument);
  EXPECT_THROW(w.add_shared(msg::Task{43}, 0, 0), std::invalid_argument);
  const auto frame = w.take();
  const auto entries = decode_batch(frame);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_FALSE(entries[0].in_segment);
  EXPECT_EQ(text_at(frame, entries[0]), "inline");
  EXPECT_TRUE(entries[1].has_payload);
  EXPECT_TRUE(entries[1].in_segment);
  EXPECT_EQ(entries[1].payload_offset, 4096u);
  EXPECT_EQ(entries[1].payload_size, 16384u);
  // A reference of 0 bytes, or a truncated one, is refused.
  Bytes b(frame.begin(), frame.end());
  Bytes zero = b;
  std::memset(zero.data() + zero.size() - 4, 0, 4);
  expect_bad(zero, "a shared payload of 0 bytes");
  b.resize(b.size() - 3);
  expect_bad(b, "shared length");
  // A reference on a message other than a Task: a Probe's payload marked as shared.
  BatchWriter p;
  ASSERT_TRUE(p.add(msg::Probe{}, bytes_of("ab")));
  const auto probe_frame = p.take();
  Bytes probe(probe_frame.begin(), probe_frame.end() - 6);  // without its u32 length and "ab"
  const std::uint32_t mark = shared_payload_mark, length = 2;
  const std::uint64_t offset = 0;
  for (const auto& [at, n] : {std::pair{static_cast<const void*>(&mark), 4}, {&offset, 8}, {&length, 4}}) {
    const auto* bytes = static_cast<const std::byte*>(at);
    probe.insert(probe.end(), bytes, bytes + n);
  }
  expect_bad(probe, "a shared payload for a message other than a Task");
}

TEST(Batch, FeaturesTravelInHelloAndWelcome) {
  msg::Hello h{"w", 2, 1 << 20};
  h.features = feature_batches;
  const auto back = std::get<msg::Hello>(decode(encode(h), 0));
  EXPECT_EQ(back.features, feature_batches);
  EXPECT_EQ(std::get<msg::Hello>(decode(encode(msg::Hello{"w", 2, 0}), 0)).features, 0u);
}

}  // namespace
}  // namespace treefarm::net
