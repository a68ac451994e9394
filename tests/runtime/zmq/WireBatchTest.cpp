/// Tests of runtime/zmq/Wire with batch frames (runtime/net/Batch.hpp): a batch travels as
/// one frame and is returned whole by try_receive_any; a receiver that did not announce
/// batches gets a BadMessage from try_receive, never a crash.

#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/net/Batch.hpp"
#include "runtime/zmq/Wire.hpp"

namespace treefarm::net {
namespace {

using ::testing::HasSubstr;

TEST(Batch, TravelsAsOneFrameAndPlainReceiversRefuseIt) {
  zmq::context_t ctx;
  zmq::socket_t parent(ctx, zmq::socket_type::router), child(ctx, zmq::socket_type::dealer);
  configure_socket(parent, true);
  configure_socket(child, false);
  child.set(zmq::sockopt::routing_id, "c");
  parent.bind("inproc://batch-test");
  child.connect("inproc://batch-test");
  BatchWriter w;
  w.add(msg::Request{5});
  w.add(msg::Result{9, "c", 0, 0, 1, false, ""});
  ASSERT_TRUE(send_batch(child, w.take()));
  zmq::pollitem_t item{static_cast<void*>(parent), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, std::chrono::milliseconds(5000));
  auto got = try_receive_any(parent, true);
  ASSERT_TRUE(got.has_value());
  auto* batch = std::get_if<ReceivedBatch>(&*got);
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->identity, "c");
  ASSERT_EQ(batch->entries.size(), 2u);
  EXPECT_EQ(std::get<msg::Request>(batch->entries[0].message).count, 5u);
  EXPECT_EQ(std::get<msg::Result>(batch->entries[1].message).task_id, 9u);
  // A receiver that did not announce batches gets a BadMessage, never a crash.
  w.add(msg::Heartbeat{});
  const std::string id = "c";
  ASSERT_TRUE(send_batch(parent, w.take(), &id));
  zmq::pollitem_t citem{static_cast<void*>(child), 0, ZMQ_POLLIN, 0};
  zmq::poll(&citem, 1, std::chrono::milliseconds(5000));
  auto plain = try_receive(child, false);
  ASSERT_TRUE(plain.has_value());
  ASSERT_TRUE(std::holds_alternative<BadMessage>(*plain));
  EXPECT_THAT(std::get<BadMessage>(*plain).reason, HasSubstr("batch"));
}

}  // namespace
}  // namespace treefarm::net
