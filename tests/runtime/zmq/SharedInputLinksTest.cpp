// zmq_node::SharedInputLinks (runtime/zmq/SharedInputLinks.hpp): which children get which
// segment within the parent's budget, and which message from a child frees a slot.
#include "runtime/zmq/SharedInputLinks.hpp"

#include "runtime/zmq/ChildBatches.hpp"

#include <gtest/gtest.h>

#include <string>

#include <zmq.hpp>

#include <algorithm>
#include <span>
#include <vector>

#include "runtime/net/Batch.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/zmq/MadeBytes.hpp"

namespace treefarm::zmq_node {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

// Segments sized for the buffer (3 MiB for B = 100) while the segments stay within the
// sized budget, copied ones (here 1 MiB) beyond it, inline beyond the whole budget. A sized
// segment's slot is freed by the task's Result, not by its acknowledgement; a copied one's
// by the acknowledgement (the child copied the input out before it acknowledged).
TEST(SharedInputLinks, ChildrenBeyondTheSizedBudgetGetCopiedSegmentsWhoseSlotsTheResultFrees) {
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
  EXPECT_TRUE(copied->holds(10)) << "a copied segment's too";
  net::msg::Result result;
  result.task_id = 10;
  links.coming_up(1, result);
  links.coming_up(3, result);
  EXPECT_FALSE(sized->holds(10));
  EXPECT_FALSE(copied->holds(10));
  EXPECT_TRUE(SharedInputLinks::frees_slots(result));
  EXPECT_TRUE(SharedInputLinks::frees_slots(net::msg::PullReply{}));
  EXPECT_FALSE(SharedInputLinks::frees_slots(net::msg::Received{{10}}));
  // A child gone: its segment with it.
  links.forget(3);
  EXPECT_EQ(links.of(3), nullptr);
}

/// An input of `size` bytes made on demand (as the master's generated inputs).
class Input final : public MadeBytes {
 public:
  explicit Input(std::size_t size) : MadeBytes(size) {}

 private:
  void make(std::span<std::byte> out) const override { std::fill(out.begin(), out.end(), std::byte{7}); }
};

/// A parent whose every child past the budget gets a copied segment of `copied` bytes, and
/// its child 1 that mapped one.
struct CopiedChild {
  zmq::context_t ctx{1};
  zmq::socket_t down{ctx, zmq::socket_type::router};
  SharedInputLinks links;
  CopiedChild(const std::string& endpoint, std::size_t copied) : links("p", SharedInputBudget{8 * mib, 0, copied}) {
    down.bind(endpoint);
    links.hello(1, net::feature_shared_inputs);
    links.offer(down, 1, "c1", true, 1000);
    net::InputsFrame answer;
    answer.mapped = true;
    EXPECT_EQ(links.answered(1, answer), std::nullopt);
  }
  /// Child 1's Result for task `t`.
  void result(std::uint64_t t) {
    net::msg::Result r;
    r.task_id = t;
    links.coming_up(1, r);
  }
};

// A copied segment's child asks for more tasks than the segment has slots: those beyond are held
// (not sent inline through the one-port window, and counted as references in it), leave in order
// as the child's Results free slots (not its acknowledgements: it reads the inputs in place), and
// all leave — inline where no slot is free — before a message of another kind, so the order to
// the child is kept.
TEST(SharedInputLinks, TasksBeyondACopiedSegmentsSlotsWaitForTheResultsInOrder) {
  CopiedChild child("inproc://shared-input-links-hold-test", 1 * mib);  // every segment a copied one
  auto& links = child.links;
  ASSERT_TRUE(links.copied(1));
  constexpr std::size_t input = 16 * 1024;
  net::BatchWriter out;
  std::size_t sent = 0, held = 0, flushes = 0;
  const auto flush = [&] {
    ++flushes;
    (void)out.take();
    return true;
  };
  for (std::uint64_t t = 0; t < 100; ++t) {
    const node::Payload p = std::make_shared<Input>(input);
    if (links.hold(1, net::msg::Task{t}, p)) {
      ++held;
      EXPECT_EQ(links.connection_bytes(1, t, input), net::shared_reference_bytes) << t;
      continue;
    }
    if (!add_to(out, net::msg::Task{t}, p, links.of(1))) {
      (void)out.take();
      ASSERT_TRUE(add_to(out, net::msg::Task{t}, p, links.of(1)));
    }
    ++sent;
  }
  EXPECT_EQ(sent, 64u);  // 1 MiB holds 64 inputs of 16 KiB
  EXPECT_EQ(held, 36u);
  EXPECT_EQ(links.of(1)->live(), 64u);
  // Not an input made on demand (a forwarded one): never held.
  const node::Payload forwarded = std::make_shared<node::VectorBytes>(std::make_shared<const std::vector<std::byte>>(input));
  EXPECT_FALSE(links.hold(1, net::msg::Task{500}, forwarded));
  // Nothing acknowledged: nothing leaves.
  (void)out.take();
  links.release_held(1, false, out, flush);
  EXPECT_EQ(out.count(), 0u);
  // The first 20 acknowledged: their inputs are still read in place, nothing leaves.
  net::msg::Received received;
  for (std::uint64_t t = 0; t < 20; ++t) received.task_ids.push_back(t);
  links.coming_up(1, received);
  links.release_held(1, false, out, flush);
  EXPECT_EQ(out.count(), 0u);
  // Their Results: 20 held tasks take their slots, in order (20 references).
  for (std::uint64_t t = 0; t < 20; ++t) child.result(t);
  links.release_held(1, false, out, flush);
  EXPECT_EQ(out.count(), 20u);
  const auto first = out.take();
  const auto entries = net::decode_batch(first);
  ASSERT_EQ(entries.size(), 20u);
  for (std::size_t e = 0; e < entries.size(); ++e) {
    EXPECT_TRUE(entries[e].in_segment);
    EXPECT_EQ(std::get<net::msg::Task>(entries[e].message).task_id, 64 + e);
  }
  EXPECT_EQ(links.of(1)->live(), 64u);
  // Another kind of message follows: the 16 still held leave first, inline (no slot is free).
  links.release_held(1, true, out, flush);
  const auto rest = net::decode_batch(out.take());
  ASSERT_EQ(rest.size(), 16u);
  EXPECT_FALSE(rest.front().in_segment);
  EXPECT_EQ(std::get<net::msg::Task>(rest.front().message).task_id, 84u);
  EXPECT_EQ(std::get<net::msg::Task>(rest.back().message).task_id, 99u);
  EXPECT_EQ(links.connection_bytes(1, 99, input), input);  // inline: its bytes on the connection
  EXPECT_EQ(flushes, 0u);  // no batch filled up
}

// A message to the child after tasks held for its segment makes them leave first (inline
// when they have no slot), so that the child sees them in order — but not the heartbeat it
// gets every second, which names no task: with it, a heartbeat during a master's first burst
// to 256 workers made most of a bag of 16 KiB inputs into frames of its heap.
TEST(SharedInputLinks, AHeartbeatPassesTheHeldTasksOtherMessagesFollowThem) {
  EXPECT_FALSE(SharedInputLinks::follows_held_tasks(net::msg::Heartbeat{}));
  EXPECT_FALSE(SharedInputLinks::follows_held_tasks(net::msg::Task{7})) << "a task is held in order itself";
  EXPECT_TRUE(SharedInputLinks::follows_held_tasks(net::msg::Shutdown{"done"}));
  EXPECT_TRUE(SharedInputLinks::follows_held_tasks(net::msg::Pull{3}));
  EXPECT_TRUE(SharedInputLinks::follows_held_tasks(net::msg::Policy{}));
}

// The node's loop sends at its turn's end only the batches of children marked waiting: tasks
// released from hold by a Result must mark theirs, or they wait for another message to that
// child — at a run's end, for ever (a 2-worker run stalled 102 tasks short this way).
TEST(SharedInputLinks, TasksReleasedByAResultLeaveAtTheTurnsEnd) {
  CopiedChild child("inproc://shared-input-links-waiting-test", 1 * mib);
  auto& links = child.links;
  ChildBatches batches;
  batches.announce(1);
  auto* out = batches.find(1);
  constexpr std::size_t input = 16 * 1024;
  for (std::uint64_t t = 0; t < 70; ++t) {
    const node::Payload p = std::make_shared<Input>(input);
    if (!links.hold(1, net::msg::Task{t}, p)) {
      ASSERT_TRUE(add_to(*out, net::msg::Task{t}, p, links.of(1)));
      batches.queued(1, *out);
    }
  }
  EXPECT_EQ(batches.take_waiting(), std::vector<std::uint32_t>{1});
  (void)out->take();  // the turn's end sent the 64 that had slots
  const auto no_flush = [] { return true; };
  batches.release_held(links, 1, false, no_flush);  // no Result yet
  EXPECT_TRUE(batches.take_waiting().empty());
  for (std::uint64_t t = 0; t < 3; ++t) child.result(t);
  batches.release_held(links, 1, false, no_flush);
  EXPECT_EQ(out->count(), 3u);
  EXPECT_EQ(batches.take_waiting(), std::vector<std::uint32_t>{1});
}

// Held tasks do not leave one by one as each Result frees a slot (a frame each to the child,
// more of the master's CPU per task with 256 workers): they wait until half the slots are
// free (or the child holds fewer than half), then leave together.
TEST(SharedInputLinks, HeldTasksLeaveOnceHalfTheSlotsAreFree) {
  CopiedChild child("inproc://shared-input-links-half-test", 2 * mib);
  auto& links = child.links;
  net::BatchWriter out;
  constexpr std::size_t input = 16 * 1024;
  for (std::uint64_t t = 0; t < 300; ++t) {
    const node::Payload p = std::make_shared<Input>(input);
    if (!links.hold(1, net::msg::Task{t}, p)) {
      ASSERT_TRUE(add_to(out, net::msg::Task{t}, p, links.of(1)));
    }
  }
  ASSERT_EQ(links.of(1)->live(), 128u);  // 2 MiB: 128 slots of 16 KiB
  (void)out.take();
  const auto flush = [] { return true; };
  for (std::uint64_t t = 0; t < 63; ++t) child.result(t);
  links.release_held(1, false, out, flush);
  EXPECT_EQ(out.count(), 0u) << "63 slots free of 128: not yet";
  child.result(63);
  links.release_held(1, false, out, flush);
  EXPECT_EQ(out.count(), 64u) << "half free: every task with a slot leaves";
  EXPECT_EQ(links.of(1)->live(), 128u);
}

// Inputs over 16 KiB travelled alone, a frame each, through the kernel's two copies. A
// segment offered for a run whose largest input is 1 MiB has room for a buffer's worth of
// them: such an input — made on demand or copied from the buffer it was made in — goes by
// reference in a batch, its bytes in the slot. A child whose segment was sized for small
// inputs, or a segment with no free slot, leaves it to go alone as before (add_to false).
TEST(SharedInputLinks, InputsTooLargeForABatchGoByReferenceInASegmentSizedForThem) {
  EXPECT_EQ(shared_input_segment_bytes(1000), 23 * mib) << "small inputs: as before";
  EXPECT_EQ(shared_input_segment_bytes(10, 4 * mib), 75 * mib) << "the quickstart: (10 + 1 + 4) x 4 MiB x 5/4";
  EXPECT_EQ(shared_input_segment_bytes(1000, 4 * mib), shared_input_big_segment_max_bytes);
  zmq::context_t ctx(1);
  zmq::socket_t down(ctx, zmq::socket_type::router);
  down.bind("inproc://shared-input-links-big-test");
  SharedInputLinks links("p");
  net::InputsFrame answer;
  answer.mapped = true;
  links.hello(1, net::feature_shared_inputs);
  links.offer(down, 1, "c1", true, 10, mib);
  links.hello(2, net::feature_shared_inputs);
  links.offer(down, 2, "c2", true, 10);
  ASSERT_EQ(links.answered(1, answer), std::nullopt);
  ASSERT_EQ(links.answered(2, answer), std::nullopt);
  ASSERT_NE(links.of(1), nullptr);
  ASSERT_NE(links.of(2), nullptr);
  EXPECT_EQ(links.of(1)->size(), 19 * mib);
  EXPECT_EQ(links.of(2)->size(), 1 * mib);

  auto held = std::make_shared<std::vector<std::byte>>(mib / 2 + 3);
  for (std::size_t i = 0; i < held->size(); ++i) (*held)[i] = static_cast<std::byte>(i * 7 % 251);
  const node::Payload copied = node::share(held);
  const node::Payload made = std::make_shared<Input>(mib - 64);
  const net::Message first = net::msg::Task{1}, second = net::msg::Task{2};
  EXPECT_FALSE(net::BatchWriter::batchable(first, copied->size()));
  EXPECT_TRUE(links.batchable(1, first, copied));
  EXPECT_FALSE(links.batchable(2, first, std::make_shared<Input>(2 * mib))) << "larger than child 2's whole segment";
  EXPECT_FALSE(links.batchable(3, first, copied)) << "no segment: alone";
  EXPECT_TRUE(links.batchable(3, net::msg::Request{4}, nullptr));

  net::BatchWriter out;
  ASSERT_TRUE(add_to(out, first, copied, links.of(1)));
  ASSERT_TRUE(add_to(out, second, made, links.of(1)));
  EXPECT_EQ(links.connection_bytes(1, 1, copied->size()), net::shared_reference_bytes);
  EXPECT_EQ(links.connection_bytes(1, 2, made->size()), net::shared_reference_bytes);
  const auto frame = out.take();
  EXPECT_LT(frame.size(), 1024u) << "references, not the inputs";
  const auto entries = net::decode_batch(frame);
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& e : entries) EXPECT_TRUE(e.in_segment);
  ASSERT_EQ(entries[0].payload_size, held->size());
  const auto in_slot = links.of(1)->bytes(SlotRef{entries[0].payload_offset, entries[0].payload_size});
  EXPECT_TRUE(std::equal(in_slot.begin(), in_slot.end(), held->begin())) << "the buffer's bytes, copied into the slot";
  const auto made_slot = links.of(1)->bytes(SlotRef{entries[1].payload_offset, entries[1].payload_size});
  EXPECT_TRUE(std::all_of(made_slot.begin(), made_slot.end(), [](std::byte b) { return b == std::byte{7}; }));

  // The ring full: the next big input is not added (it goes alone), the batch unchanged.
  std::uint64_t id = 3;
  while (links.of(1)->take(id, mib)) ++id;
  EXPECT_FALSE(add_to(out, net::msg::Task{id + 1}, copied, links.of(1)));
  EXPECT_EQ(out.count(), 0u);
  EXPECT_EQ(links.connection_bytes(1, id + 1, copied->size()), copied->size());
}

}  // namespace
}  // namespace treefarm::zmq_node
