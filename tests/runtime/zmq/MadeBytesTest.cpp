// zmq_node::MadeBytes (runtime/zmq/MadeBytes.hpp): a payload made straight into a frame,
// or once into a buffer of its own when read whole.
#include "runtime/zmq/MadeBytes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

namespace treefarm::zmq_node {
namespace {

/// Bytes 0, 1, 2, ... made on demand, counting how often they were made.
class Counting final : public MadeBytes {
 public:
  explicit Counting(std::size_t size) : MadeBytes(size) {}
  mutable std::atomic<int> made{0};

 private:
  void make(std::span<std::byte> out) const override {
    ++made;
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i);
  }
};

TEST(MadeBytes, AreMadeStraightIntoAFrameAndOnceIntoABufferOfTheirOwnWhenReadWhole) {
  const auto p = std::make_shared<Counting>(300);
  std::vector<std::byte> frame(300, std::byte{0xee});
  p->write_to(frame);  // into the frame: no buffer of the payload's own
  EXPECT_EQ(p->made.load(), 1);
  EXPECT_EQ(frame[299], std::byte{299 % 256});
  const std::byte* whole = p->data();
  EXPECT_EQ(p->made.load(), 2);
  EXPECT_EQ(p->data(), whole);  // made once, kept
  EXPECT_EQ(p->made.load(), 2);
  EXPECT_TRUE(std::equal(frame.begin(), frame.end(), whole));
}

}  // namespace
}  // namespace treefarm::zmq_node
