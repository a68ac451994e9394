// node::SmallPayloads and node::SliceBytes (runtime/node/Payload.hpp): many payloads to one
// allocation, each with its own bytes, alive as long as its last holder.
#include "runtime/node/Payload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace treefarm::node {
namespace {

void fill_with(std::span<std::byte> out, unsigned value) {
  std::fill(out.begin(), out.end(), static_cast<std::byte>(value));
}

TEST(SmallPayloads, EachPayloadHasItsOwnBytesAndOutlivesTheMakerAndItsSlabNeighbours) {
  std::vector<Payload> kept;
  {
    SmallPayloads maker(7, 4);  // four to a slab: three slabs for ten payloads
    EXPECT_EQ(maker.size(), 7u);
    for (unsigned i = 0; i < 10; ++i) kept.push_back(maker.make([&](std::span<std::byte> out) {
      ASSERT_EQ(out.size(), 7u);
      fill_with(out, i);
    }));
  }  // the maker is gone; its slabs live in their payloads
  for (unsigned i = 0; i < 10; ++i) {
    ASSERT_EQ(kept[i]->size(), 7u);
    for (std::size_t b = 0; b < 7; ++b) ASSERT_EQ(kept[i]->data()[b], static_cast<std::byte>(i)) << i;
  }
  // The payloads of one slab share one count: one allocation per slab, not per payload.
  EXPECT_EQ(kept[0].use_count(), 4);
  EXPECT_EQ(kept[8].use_count(), 2);
  // Dropping some leaves the others whole.
  const Payload last = kept[3];
  kept.erase(kept.begin(), kept.begin() + 3);
  EXPECT_EQ(last.use_count(), 2);
  for (std::size_t b = 0; b < 7; ++b) EXPECT_EQ(last->data()[b], std::byte{3});
}

TEST(SmallPayloads, AFillThatThrowsHandsOutNothingAndItsSlotIsUsedNext) {
  SmallPayloads maker(3, 2);
  EXPECT_THROW(maker.make([](std::span<std::byte>) { throw std::runtime_error("no input"); }), std::runtime_error);
  const Payload a = maker.make([](std::span<std::byte> out) { fill_with(out, 1); });
  const Payload b = maker.make([](std::span<std::byte> out) { fill_with(out, 2); });
  EXPECT_EQ(a.use_count(), 3);  // both in the first slab, which the maker holds too
  EXPECT_EQ(b->data(), a->data() + 3);
  EXPECT_EQ(b->data()[0], std::byte{2});
}

TEST(SliceBytes, IsAViewOfBytesItsOwnerKeeps) {
  auto owner = std::make_shared<std::vector<std::byte>>(10, std::byte{9});
  auto slice = std::make_shared<SliceBytes>(owner->data() + 2, 5);
  EXPECT_EQ(slice->size(), 5u);
  EXPECT_EQ(slice->data(), owner->data() + 2);
  EXPECT_EQ(SliceBytes().size(), 0u);
  EXPECT_EQ(SliceBytes().data(), nullptr);
}

}  // namespace
}  // namespace treefarm::node
