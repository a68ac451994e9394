// zmq_node::InputSegment and InputMapping (runtime/zmq/SharedInputs.hpp): the parent's
// shared-memory segment and ring of input slots, and the child's read-only mapping.
#include "runtime/zmq/SharedInputs.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fcntl.h>
#include <string>
#include <vector>

#include "runtime/net/DecodeError.hpp"
#include "runtime/zmq/FramePayload.hpp"

namespace treefarm::zmq_node {
namespace {

constexpr std::size_t kib = 1024;

/// This process's segments still named in /dev/shm.
std::size_t ours_in_dev_shm() {
  const std::string prefix = "treefarm-" + std::to_string(getpid()) + "-";
  std::size_t n = 0;
  std::error_code error;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", error)) {
    if (e.path().filename().string().starts_with(prefix)) ++n;
  }
  return n;
}

TEST(InputSegment, IsPrivateToItsUserAndLeavesNothingInDevShm) {
  {
    std::string why;
    const auto segment = InputSegment::create(64 * kib, &why);
    ASSERT_NE(segment, nullptr) << why;
    struct stat st {};
    ASSERT_EQ(stat(("/dev/shm" + segment->name()).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(st.st_uid, geteuid());
    EXPECT_EQ(static_cast<std::size_t>(st.st_size), 64 * kib);
    EXPECT_EQ(ours_in_dev_shm(), 1u);
    segment->unlink();  // the child answered: the name goes, the memory stays usable
    EXPECT_EQ(ours_in_dev_shm(), 0u);
    const auto slot = segment->take(1, 100);
    ASSERT_TRUE(slot);
    std::fill_n(segment->bytes(*slot).begin(), 100, std::byte{7});
  }
  {
    const auto segment = InputSegment::create(64 * kib);  // never answered: the destructor unlinks
    ASSERT_NE(segment, nullptr);
    EXPECT_EQ(ours_in_dev_shm(), 1u);
  }
  EXPECT_EQ(ours_in_dev_shm(), 0u);
}

TEST(InputSegment, ThatCannotBeHadSaysWhyAndLeavesNothing) {
  std::string why;
  EXPECT_EQ(InputSegment::create(std::size_t{1} << 52, &why), nullptr);  // 4 PiB: no room
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(InputSegment::create(0, &why), nullptr);
  EXPECT_EQ(ours_in_dev_shm(), 0u);
}

TEST(InputSegment, ReusesNoSlotBeforeItsTaskIsReleased) {
  const auto segment = InputSegment::create(16 * kib);
  ASSERT_NE(segment, nullptr);
  // Four slots of 4000 bytes (64-byte aligned: 4032 apart) fill 16 KiB but for 256 bytes.
  std::vector<SlotRef> slots;
  for (std::uint64_t task = 1; task <= 4; ++task) {
    const auto slot = segment->take(task, 4000);
    ASSERT_TRUE(slot) << task;
    EXPECT_EQ(slot->offset % shared_input_slot_alignment, 0u);
    slots.push_back(*slot);
  }
  EXPECT_EQ(slots[3].offset, 3 * 4032u);
  EXPECT_FALSE(segment->take(5, 4000));  // full: the caller sends it inline
  EXPECT_FALSE(segment->take(1, 10));    // task 1 holds a slot already
  // Releasing a slot in the middle frees nothing: the ring's head (task 1) still lives.
  EXPECT_TRUE(segment->release(3));
  EXPECT_FALSE(segment->release(3));
  EXPECT_FALSE(segment->take(5, 4000));
  EXPECT_TRUE(segment->holds(1, slots[0]));
  EXPECT_FALSE(segment->holds(3, slots[2]));
  // Releasing the head frees it and wraps: the new slot lies where task 1's was.
  EXPECT_TRUE(segment->release(1));
  const auto wrapped = segment->take(5, 4000);
  ASSERT_TRUE(wrapped);
  EXPECT_EQ(wrapped->offset, 0u);
  EXPECT_FALSE(segment->take(6, 100));  // between the tail (4032) and the head (4032): none
  // Task 2 released: the head moves past 2 and 3 to 4 at 12096; room for 8000 at 4032.
  EXPECT_TRUE(segment->release(2));
  const auto middle = segment->take(6, 8000);
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->offset, 4032u);
  EXPECT_EQ(segment->live(), 3u);
  // No two live slots overlap.
  const std::vector<std::pair<std::uint64_t, SlotRef>> live = {
      {4, slots[3]}, {5, *wrapped}, {6, *middle}};
  for (const auto& [a, sa] : live) {
    EXPECT_TRUE(segment->holds(a, sa));
    for (const auto& [b, sb] : live) {
      if (a != b) {
        EXPECT_TRUE(sa.offset + sa.length <= sb.offset || sb.offset + sb.length <= sa.offset);
      }
    }
  }
  for (std::uint64_t task : {4, 5, 6}) EXPECT_TRUE(segment->release(task));
  EXPECT_EQ(segment->live(), 0u);
  const auto whole = segment->take(7, 16 * kib);  // an empty ring starts again at 0
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->offset, 0u);
}

TEST(InputMapping, SeesTheParentsBytesReadOnly) {
  const auto segment = InputSegment::create(64 * kib);
  ASSERT_NE(segment, nullptr);
  const auto slot = segment->take(9, 300);
  ASSERT_TRUE(slot);
  auto out = segment->bytes(*slot);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 7);
  std::string why;
  const auto mapping = InputMapping::attach(segment->name(), 64 * kib, &why);
  ASSERT_NE(mapping, nullptr) << why;
  segment->unlink();  // the answer came: nothing stays in /dev/shm, the mapping lives on
  EXPECT_EQ(ours_in_dev_shm(), 0u);
  const auto seen = mapping->claim(9, *slot);
  ASSERT_EQ(seen.size(), 300u);
  EXPECT_TRUE(std::equal(seen.begin(), seen.end(), out.begin(), out.end()));
  EXPECT_NE(seen.data(), out.data());  // another mapping of the same memory
  EXPECT_TRUE(mapping->release(9));
  EXPECT_FALSE(mapping->release(9));
}

TEST(InputMapping, RefusesASegmentOfAnotherSizeOrOpenToOthersOrNotThere) {
  const auto segment = InputSegment::create(64 * kib);
  ASSERT_NE(segment, nullptr);
  std::string why;
  EXPECT_EQ(InputMapping::attach(segment->name(), 32 * kib, &why), nullptr);
  EXPECT_NE(why.find("not the 32768 announced"), std::string::npos) << why;
  EXPECT_EQ(InputMapping::attach("/treefarm-none-0", 64 * kib, &why), nullptr);
  EXPECT_NE(why.find("shm_open"), std::string::npos) << why;
  EXPECT_EQ(InputMapping::attach("../etc/passwd", 64 * kib, &why), nullptr);
  EXPECT_EQ(InputMapping::attach("/a/b", 64 * kib, &why), nullptr);
  EXPECT_EQ(InputMapping::attach(segment->name(), 0, &why), nullptr);
  ASSERT_EQ(chmod(("/dev/shm" + segment->name()).c_str(), 0644), 0);
  EXPECT_EQ(InputMapping::attach(segment->name(), 64 * kib, &why), nullptr);
  EXPECT_NE(why.find("open to other users"), std::string::npos) << why;
}

TEST(InputMapping, AHostileReferenceIsADecodeErrorNeverACrash) {
  const auto segment = InputSegment::create(64 * kib);
  ASSERT_NE(segment, nullptr);
  const auto mapping = InputMapping::attach(segment->name(), 64 * kib);
  ASSERT_NE(mapping, nullptr);
  EXPECT_THROW(mapping->claim(1, {0, 0}), net::DecodeError);                    // empty
  EXPECT_THROW(mapping->claim(1, {64 * kib, 1}), net::DecodeError);             // past the end
  EXPECT_THROW(mapping->claim(1, {64 * kib - 10, 11}), net::DecodeError);       // crosses it
  EXPECT_THROW(mapping->claim(1, {1, ~std::uint64_t{0}}), net::DecodeError);    // wraps around
  EXPECT_THROW(mapping->claim(1, {~std::uint64_t{0}, 2}), net::DecodeError);
  EXPECT_EQ(mapping->claim(1, {1000, 1000}).size(), 1000u);
  EXPECT_THROW(mapping->claim(2, {1500, 10}), net::DecodeError);   // inside a held slot
  EXPECT_THROW(mapping->claim(2, {500, 501}), net::DecodeError);   // overlaps its start
  EXPECT_THROW(mapping->claim(2, {1999, 100}), net::DecodeError);  // overlaps its end
  EXPECT_THROW(mapping->claim(1, {5000, 10}), net::DecodeError);   // task 1 holds one
  EXPECT_EQ(mapping->claim(2, {2000, 10}).size(), 10u);            // adjacent: fine
  EXPECT_EQ(mapping->claim(3, {500, 500}).size(), 500u);
  EXPECT_EQ(mapping->held(), 3u);
  EXPECT_TRUE(mapping->release(1));
  EXPECT_EQ(mapping->claim(4, {1500, 10}).size(), 10u);  // released: may be given again
}

/// Bytes seed, seed + 1, ... made on demand (as the master's generated inputs).
class Made final : public MadeBytes {
 public:
  Made(std::size_t size, int seed) : MadeBytes(size), seed_(seed) {}

 private:
  void make(std::span<std::byte> out) const override {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(seed_ + static_cast<int>(i));
  }
  int seed_;
};

/// Tasks 0 … count − 1, each with an input of `input` bytes made on demand (kept in `made`), added
/// to `writer` through `segment`; false when one did not fit the batch.
bool add_made(net::BatchWriter& writer, InputSegment& segment, int count, std::size_t input, std::vector<node::Payload>& made) {
  for (int t = 0; t < count; ++t) {
    made.push_back(std::make_shared<Made>(input, t));
    if (!add_to(writer, net::msg::Task{static_cast<std::uint64_t>(t)}, made.back(), &segment)) return false;
  }
  return true;
}

// The master's inputs are made straight into the child's segment, the batch carries
// references, and the worker's payloads (views into its mapping) are the generated bytes;
// a full ring sends the input inline and loses no task.
TEST(SharedInputs, AWorkerSeesTheGeneratedInputThroughTheSegmentAndAFullRingGoesInline) {
  constexpr std::size_t input = 16 * kib;  // matmul n = 32
  const auto segment = InputSegment::create(3 * input);
  ASSERT_NE(segment, nullptr);
  const auto mapping = InputMapping::attach(segment->name(), 3 * input);
  ASSERT_NE(mapping, nullptr);
  segment->unlink();
  net::BatchWriter writer;
  std::vector<node::Payload> made;
  ASSERT_TRUE(add_made(writer, *segment, 4, input, made));
  EXPECT_EQ(segment->live(), 3u);  // the fourth found the ring full
  auto frame = writer.take();
  EXPECT_LT(frame.size(), input + 1024);  // three references and one input inline
  zmq::message_t message(frame.data(), frame.size());
  net::ReceivedBatch received{"p", std::move(message), net::decode_batch(frame), {}};
  EXPECT_TRUE(received.entries[0].in_segment);
  EXPECT_FALSE(received.entries[3].in_segment);
  const auto batch = SharedBatch::of(received, mapping);
  for (std::size_t t = 0; t < 4; ++t) {
    const auto payload = SharedBatch::payload(batch, t, true);
    ASSERT_EQ(payload->size(), input);
    EXPECT_TRUE(std::equal(payload->data(), payload->data() + input, made[t]->data())) << t;
  }
  EXPECT_EQ(mapping->held(), 3u);
  // The same slots named again before the worker gave them back: refused.
  net::ReceivedBatch again{"p", zmq::message_t(frame.data(), frame.size()), net::decode_batch(frame), {}};
  EXPECT_THROW(SharedBatch::of(again, mapping), net::DecodeError);
  // Results went up: the parent frees the slots and may give them again.
  for (std::uint64_t t = 0; t < 3; ++t) {
    EXPECT_TRUE(mapping->release(t));
    EXPECT_TRUE(segment->release(t));
  }
  ASSERT_TRUE(add_to(writer, net::msg::Task{9}, made[0], segment.get()));
  EXPECT_EQ(segment->live(), 1u);
}

// A copied segment (the children beyond the sized budget, docs/protocol.md): smaller than the
// buffer, its tasks beyond the slots wait in the parent; the worker reads each input in place,
// as in a segment sized for the buffer (no copy into fresh memory per batch), so a slot named
// again before its Result went up is a hostile overlap there too, and bounds are checked.
TEST(SharedInputs, ACopiedSegmentsInputsAreReadInPlaceAndHeldUntilTheirResults) {
  constexpr std::size_t input = 16 * kib;
  const auto segment = InputSegment::create(2 * input);
  ASSERT_NE(segment, nullptr);
  const auto mapping = InputMapping::attach(segment->name(), 2 * input, nullptr, true);
  ASSERT_NE(mapping, nullptr);
  EXPECT_TRUE(mapping->copied());
  segment->unlink();
  net::BatchWriter writer;
  std::vector<node::Payload> made;
  ASSERT_TRUE(add_made(writer, *segment, 2, input, made));
  auto frame = writer.take();
  net::ReceivedBatch received{"p", zmq::message_t(frame.data(), frame.size()), net::decode_batch(frame), {}};
  const auto batch = SharedBatch::of(received, mapping);
  EXPECT_EQ(mapping->held(), 2u);  // held in place until the Results go up
  for (std::size_t t = 0; t < 2; ++t) {
    const auto payload = SharedBatch::payload(batch, t, true);
    ASSERT_EQ(payload->size(), input);
    EXPECT_TRUE(std::equal(payload->data(), payload->data() + input, made[t]->data())) << t;
  }
  // The same references again before the Results: refused as overlapping.
  net::ReceivedBatch again{"p", zmq::message_t(frame.data(), frame.size()), net::decode_batch(frame), {}};
  EXPECT_THROW(SharedBatch::of(again, mapping), net::DecodeError);
  // Bounds are still checked.
  EXPECT_THROW(mapping->claim(9, {2 * input - 10, 11}), net::DecodeError);
  EXPECT_THROW(mapping->claim(9, {0, 0}), net::DecodeError);
}

}  // namespace
}  // namespace treefarm::zmq_node
