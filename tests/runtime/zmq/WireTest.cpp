/// Tests of runtime/zmq/Wire on real ZeroMQ sockets: a DEALER (the child) connected to a
/// ROUTER (the parent) over inproc and over tcp://127.0.0.1.

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/net/Batch.hpp"
#include "runtime/zmq/Wire.hpp"

namespace treefarm::net {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

using Got = std::variant<Received, BadMessage>;

/// Polls `socket` until a whole message arrives or 5 s pass.
std::optional<Got> receive_within(zmq::socket_t& socket, bool router, std::chrono::milliseconds timeout = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto got = try_receive(socket, router)) return got;
    zmq::pollitem_t item{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 50ms);
  }
  return std::nullopt;
}

Received receive_ok(zmq::socket_t& socket, bool router) {
  auto got = receive_within(socket, router);
  if (!got) throw std::runtime_error("no message within 5 s");
  if (auto* bad = std::get_if<BadMessage>(&*got)) throw std::runtime_error("bad message: " + bad->reason);
  return std::move(std::get<Received>(*got));
}

BadMessage receive_bad(zmq::socket_t& socket, bool router) {
  auto got = receive_within(socket, router);
  if (!got) throw std::runtime_error("no message within 5 s");
  if (!std::holds_alternative<BadMessage>(*got)) throw std::runtime_error("decoded a message that should be bad");
  return std::get<BadMessage>(*got);
}

/// A parent ROUTER and a child DEALER ("child-1") connected over `transport`.
class WireTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int counter = 0;
    parent_.emplace(ctx_, zmq::socket_type::router);
    child_.emplace(ctx_, zmq::socket_type::dealer);
    configure_socket(*parent_, true);
    configure_socket(*child_, false);
    child_->set(zmq::sockopt::routing_id, "child-1");
    const std::string endpoint =
        GetParam() == "inproc" ? "inproc://wire-test-" + std::to_string(counter++) : std::string("tcp://127.0.0.1:*");
    parent_->bind(endpoint);
    child_->connect(parent_->get(zmq::sockopt::last_endpoint));
    // The ROUTER only knows the child once it has heard from it.
    ASSERT_TRUE(send(*child_, msg::Hello{"child-1", 4, 1 << 30}));
    const auto hello = receive_ok(*parent_, true);
    ASSERT_EQ(hello.identity, "child-1");
    ASSERT_TRUE(std::holds_alternative<msg::Hello>(hello.message));
    EXPECT_EQ(std::get<msg::Hello>(hello.message).cores, 4u);
    EXPECT_FALSE(hello.payload.has_value());
  }

  bool inproc() const { return GetParam() == "inproc"; }

  zmq::context_t ctx_;
  std::optional<zmq::socket_t> parent_, child_;
  const std::string child_id_ = "child-1";
};

TEST_P(WireTest, NothingWaitingIsNullopt) {
  EXPECT_FALSE(try_receive(*parent_, true).has_value());
  EXPECT_FALSE(try_receive(*child_, false).has_value());
}

TEST_P(WireTest, MessagesRoundTripBothWays) {
  msg::Welcome w;
  w.buffer = 3;
  w.policy = "fcfs";
  w.apps.push_back(msg::AppInfo{"mm", 0, 64, 65536, 524288, 2, 100, 1, 0, {}, 0, {}});
  ASSERT_TRUE(send(*parent_, w, &child_id_));
  const auto got = receive_ok(*child_, false);
  EXPECT_EQ(got.identity, "");
  ASSERT_TRUE(std::holds_alternative<msg::Welcome>(got.message));
  const auto& back = std::get<msg::Welcome>(got.message);
  EXPECT_EQ(back.buffer, 3u);
  ASSERT_EQ(back.apps.size(), 1u);
  EXPECT_EQ(back.apps[0].name, "mm");
  EXPECT_EQ(back.apps[0].weight, 2.0);

  ASSERT_TRUE(send(*child_, msg::Request{5}));
  const auto req = receive_ok(*parent_, true);
  EXPECT_EQ(req.identity, "child-1");
  ASSERT_TRUE(std::holds_alternative<msg::Request>(req.message));
  EXPECT_EQ(std::get<msg::Request>(req.message).count, 5u);
}

TEST_P(WireTest, TaskPayloadTravelsAndIsReleased) {
  auto buffer = std::make_shared<std::vector<std::byte>>(1 << 20);
  for (std::size_t i = 0; i < buffer->size(); ++i) (*buffer)[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  const std::shared_ptr<const std::vector<std::byte>> shared = buffer;
  buffer.reset();
  ASSERT_EQ(shared.use_count(), 1);
  {
    zmq::message_t payload = share_bytes(shared);
    EXPECT_EQ(shared.use_count(), 2);  // the message holds the buffer, no copy was made
    EXPECT_EQ(payload.data(), static_cast<const void*>(shared->data()));
    ASSERT_TRUE(send(*parent_, msg::Task{(std::uint64_t{1} << 40) | 7}, &child_id_, &payload));
  }
  {
    auto got = receive_ok(*child_, false);
    ASSERT_TRUE(std::holds_alternative<msg::Task>(got.message));
    EXPECT_EQ(std::get<msg::Task>(got.message).task_id, (std::uint64_t{1} << 40) | 7);
    ASSERT_TRUE(got.payload.has_value());
    ASSERT_EQ(got.payload->size(), shared->size());
    EXPECT_EQ(std::memcmp(got.payload->data(), shared->data(), shared->size()), 0);
    // inproc hands the very same buffer over: zero-copy end to end.
    if (inproc()) {
      EXPECT_EQ(got.payload->data(), static_cast<const void*>(shared->data()));
    }
  }
  // Received message destroyed: ZeroMQ lets go of the buffer (tcp: once the I/O thread
  // has written it, which is asynchronous, hence the wait).
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (shared.use_count() > 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(shared.use_count(), 1);
}

TEST_P(WireTest, TaskWithoutPayloadIsRefusedBeforeSending) {
  EXPECT_THROW(send(*parent_, msg::Task{1}, &child_id_), std::invalid_argument);
  EXPECT_FALSE(receive_within(*child_, false, 200ms).has_value());
}

TEST_P(WireTest, SendToAnUnknownPeerReturnsFalse) {
  const std::string nobody = "nobody";
  EXPECT_FALSE(send(*parent_, msg::Heartbeat{}, &nobody));
}

TEST_P(WireTest, GarbageFromADealerIsABadMessageWithItsIdentity) {
  child_->send(zmq::str_buffer("not a treefarm header at all"), zmq::send_flags::sndmore);
  child_->send(zmq::str_buffer("x"), zmq::send_flags::sndmore);
  child_->send(zmq::str_buffer("y"), zmq::send_flags::none);
  const auto bad = receive_bad(*parent_, true);
  EXPECT_EQ(bad.identity, "child-1");
  EXPECT_THAT(bad.reason, HasSubstr("bad magic"));
  // The garbage was drained whole: the next message is read normally.
  ASSERT_TRUE(send(*child_, msg::Bye{}));
  const auto next = receive_ok(*parent_, true);
  EXPECT_TRUE(std::holds_alternative<msg::Bye>(next.message));
}

TEST_P(WireTest, AValidHeaderWithAnUnexpectedPayloadIsBad) {
  const auto header = encode(msg::Heartbeat{});
  child_->send(zmq::buffer(header), zmq::send_flags::sndmore);
  child_->send(zmq::str_buffer("payload"), zmq::send_flags::none);
  const auto bad = receive_bad(*parent_, true);
  EXPECT_EQ(bad.identity, "child-1");
  EXPECT_THAT(bad.reason, HasSubstr("Heartbeat with 1 payload frames"));
}

TEST_P(WireTest, MoreThanEightFramesIsBadAndDrained) {
  const auto header = encode(msg::Heartbeat{});
  child_->send(zmq::buffer(header), zmq::send_flags::sndmore);
  for (int i = 0; i < 11; ++i) child_->send(zmq::str_buffer("frame"), zmq::send_flags::sndmore);
  child_->send(zmq::str_buffer("last"), zmq::send_flags::none);
  const auto bad = receive_bad(*parent_, true);
  EXPECT_EQ(bad.identity, "child-1");
  EXPECT_THAT(bad.reason, HasSubstr("more than 8 frames"));
  ASSERT_TRUE(send(*child_, msg::Request{2}));
  const auto next = receive_ok(*parent_, true);
  ASSERT_TRUE(std::holds_alternative<msg::Request>(next.message));
  EXPECT_EQ(std::get<msg::Request>(next.message).count, 2u);
}

TEST_P(WireTest, GarbageFromTheParentIsBadWithoutIdentity) {
  parent_->send(zmq::buffer(child_id_), zmq::send_flags::sndmore);
  parent_->send(zmq::str_buffer("TFRM"), zmq::send_flags::none);
  const auto bad = receive_bad(*child_, false);
  EXPECT_EQ(bad.identity, "");
  EXPECT_THAT(bad.reason, HasSubstr("header frame of 4 bytes"));
}

INSTANTIATE_TEST_SUITE_P(Transports, WireTest, ::testing::Values("inproc", "tcp"),
                         [](const auto& param_info) { return param_info.param; });

TEST(Wire, LoopbackEndpoints) {
  for (const char* e : {"tcp://127.0.0.1:41234", "tcp://127.0.0.1", "tcp://127.1.2.3:5555", "tcp://[::1]:5555",
                        "tcp://localhost:5555", "ipc:///tmp/treefarm.sock", "inproc://x", "127.0.0.1:80"})
    EXPECT_TRUE(is_loopback_endpoint(e)) << e;
  for (const char* e : {"tcp://192.168.1.10:5555", "tcp://10.0.0.1:1", "tcp://0.0.0.0:5555", "tcp://*:5555",
                        "tcp://[fe80::1]:5555", "tcp://[::]:5555", "tcp://example.org:5555",
                        "tcp://localhost.example.org:5555", "tcp://128.0.0.1:5555",
                        // A host name that merely starts like a loopback address is not one.
                        "tcp://127.example.org:5555", "tcp://127.0.0.1.example.org:5555"})
    EXPECT_FALSE(is_loopback_endpoint(e)) << e;
}

// Batch frames (runtime/net/Batch) on the sockets: one frame, refused by a plain receiver.
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

namespace treefarm::net {
namespace {

// Shared input offers and answers (docs/protocol.md "Shared input segments"): they travel
// whole, and a malformed one, or one to a receiver that never announced them, is a
// BadMessage, never a crash.
TEST(Wire, SharedInputOffersAndAnswersTravelAndMalformedOnesAreBadMessages) {
  zmq::context_t ctx(1);
  zmq::socket_t parent(ctx, zmq::socket_type::router), child(ctx, zmq::socket_type::dealer);
  child.set(zmq::sockopt::routing_id, "c");
  parent.bind("inproc://inputs-test");
  child.connect("inproc://inputs-test");
  auto receive = [](zmq::socket_t& s, bool router) {
    zmq::pollitem_t item{static_cast<void*>(s), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(5000));
    return try_receive_any(s, router);
  };
  ASSERT_TRUE(send_inputs_answer(child, true));
  auto got = receive(parent, true);
  ASSERT_TRUE(got);
  const auto* answer = std::get_if<InputsFrame>(&*got);
  ASSERT_NE(answer, nullptr);
  EXPECT_FALSE(answer->offer);
  EXPECT_TRUE(answer->mapped);
  EXPECT_EQ(answer->identity, "c");
  const std::string id = "c";
  ASSERT_TRUE(send_inputs_offer(parent, id, "/treefarm-1-ab", 1u << 25));
  got = receive(child, false);
  ASSERT_TRUE(got);
  const auto* offer = std::get_if<InputsFrame>(&*got);
  ASSERT_NE(offer, nullptr);
  EXPECT_TRUE(offer->offer);
  EXPECT_EQ(offer->name, "/treefarm-1-ab");
  EXPECT_EQ(offer->bytes, 1u << 25);
  EXPECT_FALSE(offer->copied);
  ASSERT_TRUE(send_inputs_offer(parent, id, "/treefarm-1-cd", 1u << 21, true));
  got = receive(child, false);
  ASSERT_TRUE(got);
  offer = std::get_if<InputsFrame>(&*got);
  ASSERT_NE(offer, nullptr);
  EXPECT_TRUE(offer->copied);
  EXPECT_EQ(offer->name, "/treefarm-1-cd");
  // Malformed: an answer that is not 0 or 1, truncated frames, an over-long name.
  auto raw = [&](std::vector<std::uint8_t> bytes) {
    child.send(zmq::message_t(bytes.data(), bytes.size()), zmq::send_flags::none);
    auto r = receive(parent, true);
    EXPECT_TRUE(r);
    return r && std::holds_alternative<BadMessage>(*r);
  };
  const std::uint8_t v = static_cast<std::uint8_t>(wire_version);
  EXPECT_TRUE(raw({'T', 'F', 'R', 'A', v, 0, 0, 0, 2}));
  EXPECT_TRUE(raw({'T', 'F', 'R', 'A', v, 0, 0, 0}));
  EXPECT_TRUE(raw({'T', 'F', 'R', 'A', v, 0, 1, 0, 1}));
  EXPECT_TRUE(raw({'T', 'F', 'R', 'O', v, 0, 0, 0, 1, 0}));
  std::vector<std::uint8_t> unknown_flag{'T', 'F', 'R', 'O', v, 0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, '/', 'a'};  // only bit 0 is known
  EXPECT_TRUE(raw(unknown_flag));
  std::vector<std::uint8_t> long_offer{'T', 'F', 'R', 'O', v, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
  long_offer.resize(long_offer.size() + 201, 'a');
  EXPECT_TRUE(raw(long_offer));
  // A receiver that reads only plain messages (try_receive) gets a BadMessage.
  ASSERT_TRUE(send_inputs_answer(child, false));
  zmq::pollitem_t item{static_cast<void*>(parent), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, std::chrono::milliseconds(5000));
  const auto plain = try_receive(parent, true);
  ASSERT_TRUE(plain);
  ASSERT_TRUE(std::holds_alternative<BadMessage>(*plain));
  EXPECT_THAT(std::get<BadMessage>(*plain).reason, HasSubstr("shared input"));
}

}  // namespace
}  // namespace treefarm::net
