// The batches a node holds for its children (runtime/zmq/ChildBatches): the end of a loop
// turn visits only the children with messages waiting, each once per batch.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/net/Messages.hpp"
#include "runtime/zmq/ChildBatches.hpp"

namespace treefarm::zmq_node {
namespace {

using Peers = std::vector<std::uint32_t>;

// Adds one small message to `peer`'s batch, as ZmqNode's send_child does.
std::size_t add(ChildBatches& b, std::uint32_t peer) {
  auto* w = b.find(peer);
  EXPECT_NE(w, nullptr) << peer;
  EXPECT_TRUE(w->add(net::msg::Task{7}));
  return b.queued(peer, *w);
}

TEST(ChildBatches, OnlyChildrenWithABatchWaitingAreVisitedEachOncePerBatch) {
  ChildBatches b;
  for (std::uint32_t peer = 0; peer < 256; ++peer) b.announce(peer);
  EXPECT_EQ(b.find(999), nullptr);  // a child without batches
  EXPECT_FALSE(b.contains(999));
  EXPECT_TRUE(b.take_waiting().empty());  // nothing sent: no child to visit
  EXPECT_EQ(add(b, 40), 1u);
  EXPECT_EQ(add(b, 3), 1u);
  EXPECT_EQ(add(b, 40), 2u);
  EXPECT_EQ(add(b, 40), 3u);
  EXPECT_EQ(b.take_waiting(), (Peers{40, 3}));  // in the order of their first messages
  EXPECT_TRUE(b.take_waiting().empty());
  // Flushed (taken) and filled again: visited again; an unflushed batch is not listed twice.
  EXPECT_EQ(b.find(40)->take().empty(), false);
  EXPECT_EQ(add(b, 40), 1u);
  EXPECT_EQ(add(b, 3), 2u);  // child 3's batch was never taken: still its first batch
  EXPECT_EQ(b.take_waiting(), (Peers{40}));
}

TEST(ChildBatches, ANewIncarnationStartsEmptyAndAGoneChildHasNoBatch) {
  ChildBatches b;
  b.announce(5);
  add(b, 5);
  add(b, 5);
  b.announce(5);  // it joined again
  EXPECT_TRUE(b.find(5)->empty());
  EXPECT_EQ(add(b, 5), 1u);
  b.erase(5);
  EXPECT_EQ(b.find(5), nullptr);
  EXPECT_FALSE(b.contains(5));
  b.announce(6);
  add(b, 6);
  b.clear();
  EXPECT_EQ(b.find(6), nullptr);
  EXPECT_TRUE(b.take_waiting().empty());
}

}  // namespace
}  // namespace treefarm::zmq_node
