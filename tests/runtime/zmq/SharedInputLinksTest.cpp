// zmq_node::SharedInputLinks (runtime/zmq/SharedInputLinks.hpp): which children get which
// segment within the parent's budget, and which message from a child frees a slot.
#include "runtime/zmq/SharedInputLinks.hpp"

#include <gtest/gtest.h>

#include <zmq.hpp>

#include "runtime/net/Messages.hpp"

namespace treefarm::zmq_node {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

// Segments sized for the buffer (3 MiB for B = 100) while the segments stay within the
// sized budget, copied ones (here 1 MiB) beyond it, inline beyond the whole budget. A sized
// segment's slot is freed by the task's Result, not by its acknowledgement; a copied one's
// by the acknowledgement (the child copied the input out before it acknowledged).
TEST(SharedInputLinks, ChildrenBeyondTheSizedBudgetGetCopiedSegmentsWhoseSlotsTheAcknowledgementFrees) {
  zmq::context_t ctx(1);
  zmq::socket_t down(ctx, zmq::socket_type::router);  // offers to absent identities are dropped
  down.bind("inproc://shared-input-links-test");
  SharedInputLinks links("p", SharedInputBudget{8 * mib, 6 * mib, 1 * mib});
  for (std::uint32_t peer = 1; peer <= 6; ++peer) {
    links.hello(peer, net::feature_shared_inputs);
    links.offer(down, peer, "c" + std::to_string(peer), true, 100);
    net::InputsFrame answer;
    answer.mapped = true;
    if (peer <= 4) EXPECT_EQ(links.answered(peer, answer), std::nullopt) << peer;
    else EXPECT_NE(links.answered(peer, answer), std::nullopt) << peer << ": an answer to no offer";
  }
  // 3 + 3 MiB sized; then 1 + 1 MiB copied (8 MiB in all); the sixth goes inline.
  for (std::uint32_t peer : {1u, 2u}) {
    ASSERT_NE(links.of(peer), nullptr) << peer;
    EXPECT_EQ(links.of(peer)->size(), 3 * mib);
    EXPECT_FALSE(links.copied(peer));
  }
  for (std::uint32_t peer : {3u, 4u}) {
    ASSERT_NE(links.of(peer), nullptr) << peer;
    EXPECT_EQ(links.of(peer)->size(), 1 * mib);
    EXPECT_TRUE(links.copied(peer));
  }
  EXPECT_EQ(links.of(5), nullptr);
  EXPECT_EQ(links.of(6), nullptr);
  // A child without ipc:// or that did not ask gets none.
  links.hello(7, 0);
  links.offer(down, 7, "c7", true, 100);
  EXPECT_EQ(links.of(7), nullptr);

  auto* sized = links.of(1);
  auto* copied = links.of(3);
  ASSERT_TRUE(sized->take(10, 1000));
  ASSERT_TRUE(copied->take(10, 1000));
  EXPECT_EQ(links.connection_bytes(1, 10, 1000), net::shared_reference_bytes);
  EXPECT_EQ(links.connection_bytes(3, 10, 1000), net::shared_reference_bytes);
  EXPECT_EQ(links.connection_bytes(3, 11, 1000), 1000u);  // inline: its bytes
  links.coming_up(1, net::msg::Received{{10}});
  links.coming_up(3, net::msg::Received{{10}});
  EXPECT_TRUE(sized->holds(10)) << "a sized segment's input is read in place until the Result";
  EXPECT_FALSE(copied->holds(10));
  net::msg::Result result;
  result.task_id = 10;
  links.coming_up(1, result);
  EXPECT_FALSE(sized->holds(10));
  // A child gone: its segment with it.
  links.forget(3);
  EXPECT_EQ(links.of(3), nullptr);
}

}  // namespace
}  // namespace treefarm::zmq_node
