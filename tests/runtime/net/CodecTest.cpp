/// Tests of runtime/net/Codec: every message kind round-trips, and every check listed in
/// docs/protocol.md rejects bad bytes with a DecodeError — never a crash, never another
/// exception.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/net/Codec.hpp"

namespace treefarm::net {
namespace {

using Bytes = std::vector<std::byte>;
using ::testing::HasSubstr;

// ---- building frames by hand --------------------------------------------------------

class BodyWriter {
 public:
  template <class T>
  BodyWriter& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  BodyWriter& str(const std::string& s) {
    put<std::uint16_t>(static_cast<std::uint16_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes.insert(bytes.end(), p, p + s.size());
    return *this;
  }
  Bytes bytes;
};

/// A header frame with the given header fields and body (defaults: a well-formed header).
Bytes make_frame(std::uint16_t kind, const Bytes& body, std::uint16_t payloads,
                 std::uint32_t magic = wire_magic, std::uint16_t version = wire_version, std::uint16_t reserved = 0) {
  BodyWriter w;
  w.put(magic).put(version).put(kind).put(static_cast<std::uint32_t>(body.size())).put(payloads).put(reserved);
  w.bytes.insert(w.bytes.end(), body.begin(), body.end());
  return w.bytes;
}

Bytes make_frame(Kind kind, const Bytes& body) {
  return make_frame(static_cast<std::uint16_t>(kind), body, static_cast<std::uint16_t>(payload_frames_for(kind)));
}

template <class T>
void poke(Bytes& b, std::size_t offset, T v) {
  ASSERT_LE(offset + sizeof(T), b.size());
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

template <class T>
T peek(const Bytes& b, std::size_t offset) {
  T v;
  std::memcpy(&v, b.data() + offset, sizeof(T));
  return v;
}

/// Header field offsets (docs/protocol.md).
constexpr std::size_t off_magic = 0, off_version = 4, off_kind = 6, off_body_length = 8, off_payloads = 12,
                      off_reserved = 14;

Message decode_frame(const Bytes& frame, std::size_t payloads) { return decode(std::span<const std::byte>(frame), payloads); }

/// Decodes and expects a DecodeError whose message contains `needle`.
void expect_rejected(const Bytes& frame, std::size_t payloads, const std::string& needle) {
  try {
    (void)decode_frame(frame, payloads);
    ADD_FAILURE() << "accepted, expected a DecodeError containing '" << needle << "'";
  } catch (const DecodeError& e) {
    EXPECT_THAT(e.what(), HasSubstr(needle));
  }
}

// ---- sample messages with non-trivial values ---------------------------------------

msg::AppInfo sample_app(const std::string& name, std::uint8_t kernel, double weight) {
  msg::AppInfo a;
  a.name = name;
  a.kernel = kernel;
  a.n = 1536;
  a.bytes = 2ull * 1536 * 1536 * 8;
  a.flops = 2.0 * 1536.0 * 1536.0 * 1536.0;
  a.weight = weight;
  a.tasks = 123456789012ull;
  a.cores_per_task = 3;
  a.memory_per_task = 5ull << 30;
  return a;
}

msg::Welcome sample_welcome() {
  msg::Welcome w;
  w.buffer = 77;
  w.policy = "cgbc";
  w.one_port = false;
  w.apps = {sample_app("matmul-1536", 0, 1.0), sample_app("add-é", 1, 0.375), sample_app("", 3, 1e-9)};
  w.calibrate_reps = 5;
  w.probe_bytes = 3ull << 20;
  w.seed = 0x0123456789ABCDEFull;
  w.hints = {msg::NodeHint{"w1", 1.25e6, {0.5, 0.001, 0}, {2, 3, 4}, {5, 6, 7}},
             msg::NodeHint{"w2", 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}};
  return w;
}

msg::Result sample_result() {
  msg::Result r;
  r.task_id = (std::uint64_t{5} << 40) | 987654;
  r.node = "node-with-a-long-name.example.org";
  r.compute_seconds = 12.5e-3;
  r.queued_seconds = 0.75;
  r.checksum = -3.141592653589793e17;
  r.failed = true;
  r.error = "std::bad_alloc";
  return r;
}

msg::TreeInfo sample_tree_info() {
  msg::TreeInfo t;
  t.name = "w3";
  t.endpoint = "tcp://10.0.0.3:5556";
  t.parent_endpoint = "tcp://10.0.0.1:5555";
  t.cores = 8;
  t.link_bandwidth = 1.25e8;
  t.apps = {{"mm", 64ull << 20, 17.2e9, 1.0, 1}, {"add", 4ull << 20, 2.6e5, 2.0, 2}};
  t.task_seconds = {1.5, 0.0};
  t.children = {{"w7", "tcp://10.0.0.7:5556", 4, 9e6}, {"w8", "", 1, 0}};
  return t;
}

std::vector<Message> sample_messages() {
  return {
      msg::Hello{"worker-α", 96, 512ull << 30},
      sample_welcome(),
      msg::Request{4096},
      msg::Task{0xFEDCBA9876543210ull},
      sample_result(),
      msg::NodeJoined{"w7", "w3", 17, 123456789},
      msg::Heartbeat{},
      msg::Shutdown{"all 1000 tasks done"},
      msg::Bye{},
      msg::Probe{0xABCDEF01u},
      msg::ProbeAck{42},
      msg::Measure{"w3", "matmul-1536", msg::Measure::What::link_bandwidth, 1.25e9},
      msg::Policy{{1, 2, 3, 250, 0, 7}},
      msg::Received{{1, 0xFEDCBA9876543210ull, 42}},
      msg::TreeQuery{4u << 20},
      sample_tree_info(),
      msg::Pull{3, 1},
      msg::PullReply{{9, 10}, {1, 0}, 2},
      msg::Blame{(1ull << 40) | 7, "w3", 2.5},
      msg::BlameReply{(1ull << 40) | 7, "w3"},
      msg::Push{{9, 1ull << 41}, {0, 3}},
      msg::PushReply{true, {9}, 2, 1, 3},
      msg::ProbeRequest{"tcp://10.0.0.2:5556", std::string(40, 'k'), 4u << 20, 3, 2.5},
      msg::ProbeReport{"w1", "tcp://10.0.0.2:5556", "w2", true, "", 1.1e9, 2.5e-4, 3.2e9, 8},
      msg::Capacity{{true, false, true}, 12, 48ull << 30, 1ull << 40},
  };
}

/// Every kind of this build is encoded (a msg::Unassigned kind would not be).
bool encodable(const Message& m) {
  return std::visit([]<class T>(const T&) { return !requires { T::unassigned_kind; }; }, m);
}

/// Valid header frames of every kind, with the payload frame count they need.
std::vector<std::pair<Bytes, std::size_t>> valid_frames() {
  std::vector<std::pair<Bytes, std::size_t>> out;
  for (const auto& m : sample_messages())
    if (encodable(m)) out.emplace_back(encode(m), payload_frames_of(m));
  return out;
}

template <class T>
T round_trip(const T& m) {
  const Bytes frame = encode(Message{m});
  const Message back = decode_frame(frame, payload_frames_of(Message{m}));
  EXPECT_TRUE(std::holds_alternative<T>(back)) << "decoded as " << kind_name(kind_of(back));
  return std::get<T>(back);
}

auto fields(const msg::AppInfo& a) {
  return std::tie(a.name, a.kernel, a.n, a.bytes, a.flops, a.weight, a.tasks, a.cores_per_task, a.memory_per_task);
}

// ---- round trips --------------------------------------------------------------------

TEST(Codec, ReceivedRoundTripsAndIsBounded) {
  const auto back = round_trip(msg::Received{{7, 1ull << 45, 9}});
  EXPECT_EQ(back.task_ids, (std::vector<std::uint64_t>{7, 1ull << 45, 9}));
  EXPECT_THROW(encode(Message{msg::Received{}}), std::invalid_argument);
  EXPECT_THROW(encode(Message{msg::Received{std::vector<std::uint64_t>(max_received_ids + 1, 1)}}), std::invalid_argument);
}

TEST(Codec, TreeQueryAndTreeInfoRoundTripAndAreBounded) {
  EXPECT_EQ(round_trip(msg::TreeQuery{123}).probe_bytes, 123u);
  EXPECT_THROW(encode(Message{msg::TreeQuery{max_tree_probe_bytes + 1}}), std::invalid_argument);
  const auto in = sample_tree_info();
  const auto out = round_trip(in);
  EXPECT_EQ(out.name, in.name);
  EXPECT_EQ(out.endpoint, in.endpoint);
  EXPECT_EQ(out.parent_endpoint, in.parent_endpoint);
  EXPECT_EQ(out.cores, in.cores);
  EXPECT_EQ(out.link_bandwidth, in.link_bandwidth);
  EXPECT_EQ(out.task_seconds, in.task_seconds);
  ASSERT_EQ(out.apps.size(), 2u);
  EXPECT_EQ(out.apps[1].name, "add");
  EXPECT_EQ(out.apps[1].bytes, 4ull << 20);
  EXPECT_EQ(out.apps[1].weight, 2.0);
  EXPECT_EQ(out.apps[1].cores_per_task, 2u);
  ASSERT_EQ(out.children.size(), 2u);
  EXPECT_EQ(out.children[0].endpoint, "tcp://10.0.0.7:5556");
  EXPECT_EQ(out.children[0].link_bandwidth, 9e6);
  EXPECT_EQ(out.children[1].endpoint, "");
  auto bad = in;
  bad.task_seconds.pop_back();
  EXPECT_THROW(encode(Message{bad}), std::invalid_argument);
}

TEST(Codec, BlameAndBlameReplyRoundTripWithTheirKinds) {
  const auto blame = round_trip(msg::Blame{(3ull << 40) | 12, "leaf-7", 1.25});
  EXPECT_EQ(blame.task_id, (3ull << 40) | 12);
  EXPECT_EQ(blame.node, "leaf-7");
  EXPECT_EQ(blame.wait_seconds, 1.25);
  EXPECT_THROW(encode(Message{msg::Blame{1, "x", -1}}), std::invalid_argument);
  const auto reply = round_trip(msg::BlameReply{5, ""});  // "" = the sender no longer knows
  EXPECT_EQ(reply.task_id, 5u);
  EXPECT_TRUE(reply.culprit.empty());
  EXPECT_EQ(static_cast<int>(kind_of(Message{msg::Blame{}})), 19);
  EXPECT_EQ(static_cast<int>(kind_of(Message{msg::BlameReply{}})), 20);
  EXPECT_STREQ(kind_name(Kind::blame_reply), "BlameReply");
}

TEST(Codec, ProbeRequestAndReportRoundTripAndAreBounded) {
  const auto q = round_trip(msg::ProbeRequest{"tcp://h:1", "", 1u << 20, 5, 2.5});
  EXPECT_EQ(q.target, "tcp://h:1");
  EXPECT_EQ(q.bytes, 1u << 20);
  EXPECT_EQ(q.rounds, 5u);
  EXPECT_DOUBLE_EQ(q.timeout, 2.5);
  EXPECT_THROW(encode(Message{msg::ProbeRequest{"", "", max_tree_probe_bytes + 1, 1, 1}}), std::invalid_argument);
  EXPECT_THROW(encode(Message{msg::ProbeRequest{"", "", 0, 0, 1}}), std::invalid_argument);   // no round
  EXPECT_THROW(encode(Message{msg::ProbeRequest{"", "", 0, 1, 0}}), std::invalid_argument);   // no timeout
  const auto r = round_trip(msg::ProbeReport{"a", "tcp://h:1", "b", false, std::string(3000, 'e'), 0, 0, 0, 2});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error.size(), max_text_bytes);  // cut to fit
  EXPECT_EQ(r.cores, 2u);
  EXPECT_EQ(static_cast<int>(kind_of(Message{msg::ProbeReport{}})), 24);
}

TEST(Codec, TreeInfoCarriesCurveKeysOptionally) {
  auto t = sample_tree_info();
  t.public_key = std::string(40, 'a');
  t.parent_public_key = std::string(40, 'b');
  for (auto& c : t.children) c.public_key = std::string(40, 'c');
  const auto back = round_trip(t);
  EXPECT_EQ(back.public_key, t.public_key);
  EXPECT_EQ(back.parent_public_key, t.parent_public_key);
  ASSERT_FALSE(back.children.empty());
  EXPECT_EQ(back.children.back().public_key, std::string(40, 'c'));
  auto bad = t;
  bad.public_key = "short";
  EXPECT_THROW(decode_frame(encode(Message{bad}), 1), DecodeError);
}

TEST(Codec, PullAndPullReplyRoundTripAndAreBounded) {
  const auto pull = round_trip(msg::Pull{7, 3});
  EXPECT_EQ(pull.count, 7u);
  EXPECT_EQ(pull.nbc, 3u);
  EXPECT_THROW(encode(Message{msg::Pull{0, 0}}), std::invalid_argument);
  const auto reply = round_trip(msg::PullReply{{5, 1ull << 41}, {0, 2}, 4});
  EXPECT_EQ(reply.task_ids, (std::vector<std::uint64_t>{5, 1ull << 41}));
  EXPECT_EQ(reply.bcs, (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(reply.rejected, 4u);
  EXPECT_EQ(round_trip(msg::PullReply{{}, {}, 2}).rejected, 2u);  // a PULL-Reject
  EXPECT_THROW(encode(Message{msg::PullReply{}}), std::invalid_argument);                // neither
  EXPECT_THROW(encode(Message{msg::PullReply{{1, 2}, {0}, 0}}), std::invalid_argument);  // one counter short
  EXPECT_EQ(static_cast<int>(kind_of(Message{msg::PullReply{}})), 18);
  EXPECT_STREQ(kind_name(Kind::pull), "Pull");
}

TEST(Codec, PushAndPushReplyRoundTripAndAreBounded) {
  const auto push = round_trip(msg::Push{{5, 1ull << 41}, {0, 2}});
  EXPECT_EQ(push.task_ids, (std::vector<std::uint64_t>{5, 1ull << 41}));
  EXPECT_EQ(push.bcs, (std::vector<std::uint32_t>{0, 2}));
  EXPECT_THROW(encode(Message{msg::Push{}}), std::invalid_argument);                        // no task
  EXPECT_THROW(encode(Message{msg::Push{{1, 2}, {0}}}), std::invalid_argument);             // one counter short
  EXPECT_THROW(encode(Message{msg::Push{std::vector<std::uint64_t>(max_received_ids + 1, 1),
                                        std::vector<std::uint32_t>(max_received_ids + 1, 0)}}),
               std::invalid_argument);
  const auto reply = round_trip(msg::PushReply{true, {5, 7}, 3, 1, 2});
  EXPECT_TRUE(reply.answer);
  EXPECT_EQ(reply.refused, (std::vector<std::uint64_t>{5, 7}));
  EXPECT_EQ(reply.free, 3u);
  EXPECT_EQ(reply.queue, 1u);
  EXPECT_EQ(reply.nbc, 2u);
  const auto status = round_trip(msg::PushReply{false, {}, 4, 0, 0});
  EXPECT_FALSE(status.answer);
  EXPECT_EQ(status.free, 4u);
  EXPECT_THROW(encode(Message{msg::PushReply{false, {5}, 1, 0, 0}}), std::invalid_argument);  // refuses without a push
  EXPECT_THROW(encode(Message{msg::PushReply{false, {}, (1u << 20) + 1, 0, 0}}), std::invalid_argument);
  // Hostile bodies: an answer byte other than 0/1, a count past the bound, a Push of 0.
  Bytes f = encode(msg::PushReply{true, {}, 1, 0, 0});
  f[header_bytes] = std::byte{2};
  EXPECT_THROW(decode_frame(f, 0), DecodeError);
  f = encode(msg::PushReply{true, {}, 1, 0, 0});
  const auto big = static_cast<std::uint32_t>(max_received_ids + 1);
  std::memcpy(f.data() + header_bytes + 13, &big, 4);
  EXPECT_THROW(decode_frame(f, 0), DecodeError);
  f = encode(msg::Push{{1}, {0}});
  const std::uint32_t zero = 0;
  std::memcpy(f.data() + header_bytes, &zero, 4);
  EXPECT_THROW(decode_frame(f, 0), DecodeError);
  EXPECT_EQ(static_cast<int>(kind_of(Message{msg::Push{}})), 21);
  EXPECT_EQ(static_cast<int>(kind_of(Message{msg::PushReply{}})), 22);
  EXPECT_STREQ(kind_name(Kind::push_reply), "PushReply");
}

// Capacity (papers/lee2010 slides 19-20): a subtree's capacity, and the requirements a
// Welcome carries in its optional block after the tree repair fields.
TEST(Codec, CapacityRoundTripsAndIsBounded) {
  const auto c = round_trip(msg::Capacity{{true, false}, 3, 8ull << 30, 5ull << 30});
  EXPECT_EQ(c.fits, (std::vector<bool>{true, false}));
  EXPECT_EQ(c.cores, 3u);
  EXPECT_EQ(c.memory, 8ull << 30);
  EXPECT_EQ(c.disk, 5ull << 30);
  EXPECT_EQ(static_cast<int>(kind_of(Message{msg::Capacity{}})), 25);
  EXPECT_STREQ(kind_name(Kind::capacity), "Capacity");
  EXPECT_THROW(encode(Message{msg::Capacity{}}), std::invalid_argument);  // no application
  EXPECT_THROW(encode(Message{msg::Capacity{std::vector<bool>(max_apps + 1, true), 1, 0, 0}}), std::invalid_argument);
  Bytes f = encode(msg::Capacity{{true}, 1, 0, 0});
  f[header_bytes + 28] = std::byte{2};  // a fits byte other than 0/1
  EXPECT_THROW(decode_frame(f, 0), DecodeError);
  f = encode(msg::Capacity{{true}, 1, 0, 0});
  const std::uint32_t zero = 0;
  std::memcpy(f.data() + header_bytes + 24, &zero, 4);  // app_count 0 (and a trailing byte)
  EXPECT_THROW(decode_frame(f, 0), DecodeError);
}

TEST(Codec, WelcomeCarriesRequirementsAfterTheTreeRepairFields) {
  msg::Welcome in = sample_welcome();
  in.sender.clear();
  in.ancestors.clear();
  const auto plain = encode(in);
  in.apps[0].disk_per_task = 3ull << 30;
  in.apps[0].min_speed = 2.5e9;
  const auto out = round_trip(in);
  EXPECT_EQ(out.apps[0].disk_per_task, 3ull << 30);
  EXPECT_EQ(out.apps[0].min_speed, 2.5e9);
  for (std::size_t k = 1; k < out.apps.size(); ++k) {
    EXPECT_EQ(out.apps[k].disk_per_task, 0u);
    EXPECT_EQ(out.apps[k].min_speed, 0.0);
  }
  EXPECT_TRUE(out.sender.empty());
  EXPECT_TRUE(out.ancestors.empty());
  // Without requirements the bytes are those of before (the block is left out).
  in.apps[0].disk_per_task = 0;
  in.apps[0].min_speed = 0;
  EXPECT_EQ(encode(in), plain);
  // A block for another number of applications is refused.
  in.apps[0].min_speed = 1;
  Bytes f = encode(in);
  const std::uint32_t wrong = static_cast<std::uint32_t>(in.apps.size() + 1);
  const std::size_t block = f.size() - in.apps.size() * 16 - 4;
  std::memcpy(f.data() + block, &wrong, 4);
  EXPECT_THROW(decode_frame(f, 0), DecodeError);
}

TEST(Codec, HelloRoundTrips) {
  const msg::Hello in{"worker-α", 96, 512ull << 30};
  const auto out = round_trip(in);
  EXPECT_EQ(out.name, in.name);
  EXPECT_EQ(out.cores, 96u);
  EXPECT_EQ(out.memory, 512ull << 30);
}

TEST(Codec, WelcomeRoundTrips) {
  const auto in = sample_welcome();
  const auto out = round_trip(in);
  EXPECT_EQ(out.buffer, 77u);
  EXPECT_EQ(out.policy, "cgbc");
  EXPECT_FALSE(out.one_port);
  ASSERT_EQ(out.apps.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(fields(out.apps[i]), fields(in.apps[i])) << "app " << i;
  EXPECT_EQ(out.calibrate_reps, 5u);
  EXPECT_EQ(out.probe_bytes, 3ull << 20);
  EXPECT_EQ(out.seed, 0x0123456789ABCDEFull);
  ASSERT_EQ(out.hints.size(), 2u);
  EXPECT_EQ(out.hints[0].name, "w1");
  EXPECT_EQ(out.hints[0].link_bandwidth, 1.25e6);
  EXPECT_EQ(out.hints[0].task_seconds, (std::vector<double>{0.5, 0.001, 0}));
  EXPECT_EQ(out.hints[0].alpha, (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(out.hints[0].received, (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(out.hints[1].name, "w2");
  msg::Welcome one_port = in;
  one_port.one_port = true;
  EXPECT_TRUE(round_trip(one_port).one_port);
}

TEST(Codec, RequestTaskRoundTrip) {
  EXPECT_EQ(round_trip(msg::Request{4096}).count, 4096u);
  EXPECT_EQ(round_trip(msg::Request{1u << 20}).count, 1u << 20);  // the largest allowed
  EXPECT_EQ(round_trip(msg::Task{0xFEDCBA9876543210ull}).task_id, 0xFEDCBA9876543210ull);
}

TEST(Codec, ResultRoundTrips) {
  const auto in = sample_result();
  const auto out = round_trip(in);
  EXPECT_EQ(out.task_id, in.task_id);
  EXPECT_EQ(out.node, in.node);
  EXPECT_EQ(out.compute_seconds, in.compute_seconds);
  EXPECT_EQ(out.queued_seconds, in.queued_seconds);
  EXPECT_EQ(out.checksum, in.checksum);
  EXPECT_TRUE(out.failed);
  EXPECT_EQ(out.error, in.error);
}

TEST(Codec, ResultChecksumMayBeNan) {
  // The checksum is judged by the master, so a NaN from a broken kernel must arrive.
  auto in = sample_result();
  in.checksum = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(round_trip(in).checksum));
}

TEST(Codec, ResultErrorIsCutToTheStringLimit) {
  auto in = sample_result();
  in.error = std::string(max_text_bytes + 1000, 'x');  // a command's stderr tail fits in max_text_bytes
  EXPECT_EQ(round_trip(in).error, std::string(max_text_bytes, 'x'));
}

TEST(Codec, NodeJoinedShutdownAndEmptyKindsRoundTrip) {
  const auto j = round_trip(msg::NodeJoined{"w7", "w3", 17, 123456789});
  EXPECT_EQ(j.name, "w7");
  EXPECT_EQ(j.parent, "w3");
  EXPECT_EQ(j.cores, 17u);
  EXPECT_EQ(j.memory, 123456789u);
  EXPECT_EQ(round_trip(msg::Shutdown{"all 1000 tasks done"}).reason, "all 1000 tasks done");
  (void)round_trip(msg::Heartbeat{});
  (void)round_trip(msg::Bye{});
}

TEST(Codec, CalibrationKindsRoundTrip) {
  EXPECT_EQ(round_trip(msg::Probe{0xABCDEF01u}).seq, 0xABCDEF01u);
  EXPECT_EQ(round_trip(msg::ProbeAck{42}).seq, 42u);
  const auto m = round_trip(msg::Measure{"w3", "matmul-1536", msg::Measure::What::link_bandwidth, 1.25e9});
  EXPECT_EQ(m.node, "w3");
  EXPECT_EQ(m.app, "matmul-1536");
  EXPECT_EQ(m.what, msg::Measure::What::link_bandwidth);
  EXPECT_EQ(m.value, 1.25e9);
  const auto t = round_trip(msg::Measure{"w3", "", msg::Measure::What::task_seconds, 0.0});
  EXPECT_EQ(t.what, msg::Measure::What::task_seconds);
  EXPECT_EQ(t.value, 0.0);  // 0 = too fast to resolve: allowed
  const auto o = round_trip(msg::Measure{"w3", "gz", msg::Measure::What::output_bytes, 70123.5});
  EXPECT_EQ(o.what, msg::Measure::What::output_bytes);
  EXPECT_EQ(o.app, "gz");
  EXPECT_EQ(o.value, 70123.5);
}

TEST(Codec, StringsAtTheLimitRoundTrip) {
  const std::string longest(max_name_bytes, 'n');
  EXPECT_EQ(round_trip(msg::Hello{longest, 1, 0}).name, longest);
  EXPECT_EQ(round_trip(msg::Shutdown{longest}).reason, longest);
}

TEST(Codec, KindOfAndNamesCoverEveryKind) {
  // One sample per alternative of Message, in kind order: a new kind must be added here
  // (and so to every rejection test below, which iterate over the samples).
  const auto all = sample_messages();
  ASSERT_EQ(all.size(), std::variant_size_v<Message>);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Kind k = kind_of(all[i]);
    EXPECT_EQ(static_cast<std::uint16_t>(k), i + 1);
    EXPECT_STRNE(kind_name(k), "?");
    EXPECT_EQ(payload_frames_for(k), k == Kind::task || k == Kind::probe || k == Kind::tree_info ? 1u : 0u);
  }
  EXPECT_STREQ(kind_name(Kind::node_joined), "NodeJoined");
  EXPECT_STREQ(kind_name(static_cast<Kind>(999)), "?");
}

TEST(Codec, HeaderLayoutMatchesTheDocument) {
  const Bytes f = encode(msg::Task{42});
  ASSERT_EQ(f.size(), header_bytes + 8);
  EXPECT_EQ(std::memcmp(f.data(), "TFRM", 4), 0);
  EXPECT_EQ(peek<std::uint32_t>(f, off_magic), wire_magic);
  EXPECT_EQ(peek<std::uint16_t>(f, off_version), wire_version);
  EXPECT_EQ(peek<std::uint16_t>(f, off_kind), 4u);
  EXPECT_EQ(peek<std::uint32_t>(f, off_body_length), 8u);
  EXPECT_EQ(peek<std::uint16_t>(f, off_payloads), 1u);
  EXPECT_EQ(peek<std::uint16_t>(f, off_reserved), 0u);
  EXPECT_EQ(peek<std::uint64_t>(f, header_bytes), 42u);
  EXPECT_EQ(encode(msg::Heartbeat{}).size(), header_bytes);
}

TEST(Codec, EncodeRefusesWhatCannotTravel) {
  EXPECT_THROW((void)encode(msg::Hello{std::string(max_name_bytes + 1, 'n'), 1, 0}), std::invalid_argument);
  EXPECT_THROW((void)encode(msg::Shutdown{std::string(max_name_bytes + 1, 'r')}), std::invalid_argument);
}

// ---- rejection: header --------------------------------------------------------------

TEST(CodecRejects, TruncatedHeader) {
  for (const auto& [frame, payloads] : valid_frames())
    for (std::size_t n = 0; n < header_bytes; ++n)
      expect_rejected(Bytes(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(n)), payloads,
                      "expected at least 16");
}

TEST(CodecRejects, TruncatedBodyAtEveryLength) {
  for (const auto& [frame, payloads] : valid_frames()) {
    const std::size_t body = frame.size() - header_bytes;
    const bool welcome = peek<std::uint16_t>(frame, off_kind) == static_cast<std::uint16_t>(Kind::welcome);
    const bool tree_info = peek<std::uint16_t>(frame, off_kind) == static_cast<std::uint16_t>(Kind::tree_info);
    int older_welcomes = 0;
    int older_tree_infos = 0;
    for (std::size_t n = 0; n < body; ++n) {
      SCOPED_TRACE(std::string(kind_name(static_cast<Kind>(peek<std::uint16_t>(frame, off_kind)))) + " body prefix " +
                   std::to_string(n));
      Bytes cut(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(header_bytes + n));
      // As sent: the header still claims the whole body.
      expect_rejected(cut, payloads, "body bytes, frame has");
      // Header patched to agree with the frame: the body parser itself must notice.
      poke<std::uint32_t>(cut, off_body_length, static_cast<std::uint32_t>(n));
      if (welcome) {  // cut exactly before the optional tree repair fields: an older Welcome
        try {
          const auto w = std::get<msg::Welcome>(decode(cut, payloads));
          EXPECT_TRUE(w.sender.empty() && w.ancestors.empty());
          ++older_welcomes;
          continue;
        } catch (const DecodeError&) {
        }
      }
      if (tree_info) {  // cut exactly before the optional CURVE keys: an older TreeInfo
        try {
          const auto t = std::get<msg::TreeInfo>(decode(cut, payloads));
          EXPECT_TRUE(t.public_key.empty() && t.parent_public_key.empty());
          ++older_tree_infos;
          continue;
        } catch (const DecodeError&) {
        }
      }
      expect_rejected(cut, payloads, "truncated");
    }
    EXPECT_LE(older_welcomes, 1);
    EXPECT_LE(older_tree_infos, 1);
  }
}

TEST(CodecRejects, OversizedBodyLength) {
  for (std::uint32_t len : {static_cast<std::uint32_t>(max_body_bytes + 1), 0x7FFFFFFFu, 0xFFFFFFFFu}) {
    Bytes f = encode(msg::Request{3});
    poke<std::uint32_t>(f, off_body_length, len);
    expect_rejected(f, 0, "over the limit");
  }
  // A frame really that large is refused by the length check, before any parsing.
  Bytes big = make_frame(Kind::shutdown, Bytes(max_body_bytes + 1, std::byte{0}));
  expect_rejected(big, 0, "over the limit");
}

TEST(CodecRejects, BodyLengthNotMatchingTheFrame) {
  for (const auto& [frame, payloads] : valid_frames()) {
    const auto len = peek<std::uint32_t>(frame, off_body_length);
    Bytes more = frame, less = frame;
    poke<std::uint32_t>(more, off_body_length, len + 1);
    expect_rejected(more, payloads, "body bytes, frame has");
    if (len > 0) {
      poke<std::uint32_t>(less, off_body_length, len - 1);
      expect_rejected(less, payloads, "body bytes, frame has");
    }
  }
}

TEST(CodecRejects, WrongMagic) {
  for (const auto& [frame, payloads] : valid_frames()) {
    Bytes f = frame;
    poke<std::uint32_t>(f, off_magic, 0x4D524655);
    expect_rejected(f, payloads, "bad magic");
  }
  Bytes swapped = encode(msg::Bye{});  // the magic in the wrong byte order
  poke<std::uint32_t>(swapped, off_magic, __builtin_bswap32(wire_magic));
  expect_rejected(swapped, 0, "bad magic");
}

TEST(CodecRejects, WrongVersion) {
  for (std::uint16_t v : {std::uint16_t{0}, std::uint16_t(wire_version - 1), std::uint16_t(wire_version + 1),
                          std::uint16_t{0xFFFF}}) {
    Bytes f = encode(msg::Hello{"w", 1, 1});
    poke<std::uint16_t>(f, off_version, v);
    expect_rejected(f, 0, "protocol version " + std::to_string(v));
  }
}

TEST(CodecRejects, UnknownKind) {
  const auto first_unused = static_cast<std::uint16_t>(std::variant_size_v<Message> + 1);
  for (std::uint16_t k : {std::uint16_t{0}, first_unused, std::uint16_t{999}, std::uint16_t{0xFFFF}}) {
    expect_rejected(make_frame(k, {}, 0), 0, "unknown message kind " + std::to_string(k));
    expect_rejected(make_frame(k, {}, 1), 1, "unknown message kind");
  }
}

TEST(CodecRejects, WrongPayloadFrameCount) {
  const Bytes task = encode(msg::Task{1});
  expect_rejected(task, 0, "Task with 0 payload frames");   // header says 1, none followed
  expect_rejected(task, 2, "Task with 2 payload frames");
  Bytes task_declares_none = task;
  poke<std::uint16_t>(task_declares_none, off_payloads, 0);
  expect_rejected(task_declares_none, 0, "Task");           // consistent, but a Task needs one
  const Bytes hello = encode(msg::Hello{"w", 1, 1});
  expect_rejected(hello, 1, "Hello with 1 payload frames");  // header says 0, one followed
  Bytes hello_declares_one = hello;
  poke<std::uint16_t>(hello_declares_one, off_payloads, 1);
  expect_rejected(hello_declares_one, 1, "Hello");           // consistent, but Hello has none
  expect_rejected(encode(msg::Probe{1}), 0, "Probe with 0 payload frames");
  expect_rejected(encode(msg::ProbeAck{1}), 1, "ProbeAck with 1 payload frames");
  for (const auto& [frame, payloads] : valid_frames()) expect_rejected(frame, payloads + 1, "payload frames");
}

TEST(CodecRejects, NonZeroReserved) {
  for (std::uint16_t r : {std::uint16_t{1}, std::uint16_t{0x8000}}) {
    Bytes f = encode(msg::Heartbeat{});
    poke<std::uint16_t>(f, off_reserved, r);
    expect_rejected(f, 0, "reserved");
  }
}

TEST(CodecRejects, TrailingBytes) {
  for (const auto& [frame, payloads] : valid_frames()) {
    Bytes f = frame;
    f.push_back(std::byte{0});
    poke<std::uint32_t>(f, off_body_length, static_cast<std::uint32_t>(f.size() - header_bytes));
    // A Welcome may go on with the optional tree repair fields: one byte is a cut sender.
    // A Shutdown may go on with the optional reset byte, which must be 1; a Result with its
    // has_output byte, which must be 1; a Heartbeat with its node states (a cut count).
    const auto kind = static_cast<Kind>(peek<std::uint16_t>(frame, off_kind));
    expect_rejected(f, payloads,
                    kind == Kind::welcome     ? "truncated body at field 'sender'"
                    : kind == Kind::shutdown  ? "reset byte 0, expected 1"
                    : kind == Kind::result    ? "has_output byte 0, expected 1 or absent"
                    : kind == Kind::heartbeat ? "truncated body at field 'load_count'"
                                              : "1 unexpected trailing bytes");
  }
}

// ---- rejection: bodies --------------------------------------------------------------

BodyWriter hello_body(const std::string& name, std::uint32_t cores = 4) {
  BodyWriter b;
  b.str(name).put<std::uint32_t>(cores).put<std::uint64_t>(1 << 30).put<std::uint32_t>(0);  // features
  return b;
}

TEST(CodecRejects, StringsLongerThanTheLimit) {
  expect_rejected(make_frame(Kind::hello, hello_body(std::string(max_name_bytes + 1, 'n')).bytes), 0, "limit 128");
  expect_rejected(make_frame(Kind::shutdown, BodyWriter().str(std::string(4000, 'r')).bytes), 0, "'reason'");
  // A length prefix far past the end of the body (and past the limit).
  expect_rejected(make_frame(Kind::shutdown, BodyWriter().put<std::uint16_t>(0xFFFF).bytes), 0, "limit");
  // Within the limit but longer than what is left of the body.
  expect_rejected(make_frame(Kind::shutdown, BodyWriter().put<std::uint16_t>(100).put<std::uint32_t>(0).bytes), 0,
                  "truncated string");
  BodyWriter joined;
  joined.str("w2").str(std::string(max_name_bytes + 1, 'p')).put<std::uint32_t>(1).put<std::uint64_t>(1);
  expect_rejected(make_frame(Kind::node_joined, joined.bytes), 0, "'parent'");
}

TEST(CodecRejects, HelloFieldsOutOfRange) {
  expect_rejected(make_frame(Kind::hello, hello_body("").bytes), 0, "empty node name");
  expect_rejected(make_frame(Kind::hello, hello_body("w", (1u << 16) + 1).bytes), 0, "absurd core count");
  EXPECT_NO_THROW((void)decode_frame(make_frame(Kind::hello, hello_body("w", 1u << 16).bytes), 0));
}

/// A Welcome body; `count` is what the app_count field says, `apps` what follows.
Bytes welcome_body(std::uint32_t count, const std::vector<msg::AppInfo>& apps, std::uint32_t buffer = 10,
                   std::uint32_t calibrate_reps = 0, std::uint64_t probe_bytes = 0) {
  BodyWriter b;
  b.put(buffer).str("fcfs").put<std::uint8_t>(1).put(count);
  for (const auto& a : apps)
    b.str(a.name).put(a.kernel).put(a.n).put(a.bytes).put(a.flops).put(a.weight).put(a.tasks).put(a.cores_per_task).put(
        a.memory_per_task);
  b.put(calibrate_reps).put(probe_bytes).put<std::uint64_t>(7).put<std::uint32_t>(0);  // no node hints
  b.put<std::uint32_t>(feature_batches);
  return b.bytes;
}

TEST(CodecRejects, WelcomeWithNoOrAbsurdApplicationCounts) {
  const auto app = sample_app("mm", 0, 1);
  EXPECT_NO_THROW((void)decode_frame(make_frame(Kind::welcome, welcome_body(1, {app})), 0));
  expect_rejected(make_frame(Kind::welcome, welcome_body(0, {})), 0, "Welcome with 0 applications");
  expect_rejected(make_frame(Kind::welcome, welcome_body(static_cast<std::uint32_t>(max_apps + 1), {app})), 0,
                  "applications");
  expect_rejected(make_frame(Kind::welcome, welcome_body(0xFFFFFFFF, {app})), 0, "4294967295 applications");
  // A count within the limit that the body does not hold (the fields after the list are
  // read as a second application, so the error may name any of its checks).
  expect_rejected(make_frame(Kind::welcome, welcome_body(2, {app})), 0, "");
  expect_rejected(make_frame(Kind::welcome, welcome_body(static_cast<std::uint32_t>(max_apps), {app})), 0, "");
}

TEST(CodecRejects, WelcomeFieldsOutOfRange) {
  auto with = [](auto change) {
    auto a = sample_app("mm", 0, 1);
    change(a);
    return make_frame(Kind::welcome, welcome_body(1, {a}));
  };
  expect_rejected(make_frame(Kind::welcome, welcome_body(1, {sample_app("mm", 0, 1)}, 0)), 0, "buffer");
  expect_rejected(make_frame(Kind::welcome, welcome_body(1, {sample_app("mm", 0, 1)}, (1u << 20) + 1)), 0, "buffer");
  expect_rejected(with([](msg::AppInfo& a) { a.kernel = 5; }), 0, "unknown kernel 5");
  // 4 is a command: its argument vector must follow.
  expect_rejected(with([](msg::AppInfo& a) { a.kernel = 4; }), 0, "command of 0 arguments");
  expect_rejected(with([](msg::AppInfo& a) { a.bytes = max_payload_bytes + 1; }), 0, "absurd size");
  expect_rejected(with([](msg::AppInfo& a) { a.weight = 0; }), 0, "non-positive weight");
  expect_rejected(with([](msg::AppInfo& a) { a.weight = -1; }), 0, "non-positive weight");
  expect_rejected(with([](msg::AppInfo& a) { a.tasks = (std::uint64_t{1} << 40) + 1; }), 0, "too many tasks");
  expect_rejected(with([](msg::AppInfo& a) { a.cores_per_task = 0; }), 0, "cores_per_task");
  expect_rejected(with([](msg::AppInfo& a) { a.cores_per_task = (1u << 16) + 1; }), 0, "cores_per_task");
  const auto app = sample_app("mm", 0, 1);
  EXPECT_NO_THROW((void)decode_frame(make_frame(Kind::welcome, welcome_body(1, {app}, 10, 10000, max_payload_bytes)), 0));
  expect_rejected(make_frame(Kind::welcome, welcome_body(1, {app}, 10, 10001, 0)), 0, "calibration repetition");
  expect_rejected(make_frame(Kind::welcome, welcome_body(1, {app}, 10, 1, max_payload_bytes + 1)), 0, "probe size");
}

Bytes measure_body(std::uint8_t what, double value) {
  return BodyWriter().str("w1").str("mm").put(what).put(value).bytes;
}

TEST(CodecRejects, PolicyPayloadOverTheLimit) {
  Bytes body;
  const std::uint32_t n = static_cast<std::uint32_t>(max_policy_bytes + 1);
  const auto* p = reinterpret_cast<const std::byte*>(&n);
  body.insert(body.end(), p, p + 4);
  body.resize(body.size() + n);
  expect_rejected(make_frame(Kind::policy, body), 0, "limit");
  Bytes short_body(p, p + 4);  // claims n bytes, has none
  expect_rejected(make_frame(Kind::policy, short_body), 0, "limit");
}

TEST(CodecRejects, MeasureFieldsOutOfRange) {
  EXPECT_NO_THROW((void)decode_frame(make_frame(Kind::measure, measure_body(1, 1e9)), 0));
  EXPECT_NO_THROW((void)decode_frame(make_frame(Kind::measure, measure_body(3, 7.0)), 0));  // fallbacks
  EXPECT_NO_THROW((void)decode_frame(make_frame(Kind::measure, measure_body(7, 65536.0)), 0));  // output_bytes
  expect_rejected(make_frame(Kind::measure, measure_body(8, 1.0)), 0, "Measure of unknown kind 8");
  EXPECT_NO_THROW((void)decode_frame(make_frame(Kind::measure, measure_body(2, 1e9)), 0));  // out_bandwidth
  expect_rejected(make_frame(Kind::measure, measure_body(0, -1.0)), 0, "negative value");
  expect_rejected(make_frame(Kind::measure, measure_body(0, std::numeric_limits<double>::quiet_NaN())), 0,
                  "'value' is not a finite number");
  expect_rejected(make_frame(Kind::measure, measure_body(1, std::numeric_limits<double>::infinity())), 0,
                  "'value' is not a finite number");
}

TEST(CodecRejects, RequestCountOutOfRange) {
  expect_rejected(make_frame(Kind::request, BodyWriter().put<std::uint32_t>(0).bytes), 0, "Request for 0 tasks");
  expect_rejected(make_frame(Kind::request, BodyWriter().put<std::uint32_t>((1u << 20) + 1).bytes), 0, "Request for");
  expect_rejected(make_frame(Kind::request, BodyWriter().put<std::uint32_t>(0xFFFFFFFF).bytes), 0, "Request for");
}

TEST(CodecRejects, NanAndInfinityInFiniteFields) {
  const double bad[] = {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::signaling_NaN(), std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity()};
  for (double v : bad) {
    auto flops = sample_app("mm", 0, 1);
    flops.flops = v;
    expect_rejected(make_frame(Kind::welcome, welcome_body(1, {flops})), 0, "'app.flops' is not a finite number");
    auto weight = sample_app("mm", 0, 1);
    weight.weight = v;
    expect_rejected(make_frame(Kind::welcome, welcome_body(1, {weight})), 0, "'app.weight' is not a finite number");
    auto compute = sample_result();
    compute.compute_seconds = v;
    expect_rejected(encode(compute), 0, "'compute_seconds' is not a finite number");
    auto queued = sample_result();
    queued.queued_seconds = v;
    expect_rejected(encode(queued), 0, "'queued_seconds' is not a finite number");
  }
}

// ---- randomized: only DecodeError may escape ------------------------------------------

/// Decodes `frame`; anything but success or DecodeError is a test failure. An accepted
/// frame must survive encode → decode. Returns whether it was accepted.
bool decode_checked(const Bytes& frame, std::size_t payloads) {
  try {
    const Message m = decode_frame(frame, payloads);
    const Bytes again = encode(m);
    const Message back = decode_frame(again, payload_frames_of(m));
    EXPECT_EQ(encode(back), again);
    return true;
  } catch (const DecodeError&) {
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "escaped: " << e.what();
  } catch (...) {
    ADD_FAILURE() << "escaped: a non-std exception";
  }
  return false;
}

TEST(CodecFuzz, HundredThousandRandomByteStrings) {
  std::mt19937_64 rng(20060501);
  std::size_t accepted = 0;
  for (int i = 0; i < 100000; ++i) {
    Bytes f(rng() % 96);
    for (auto& b : f) b = static_cast<std::byte>(rng());
    // Half of them get a valid magic and version so that the deeper checks are reached too.
    if (i % 2 == 0 && f.size() >= header_bytes) {
      poke<std::uint32_t>(f, off_magic, wire_magic);
      poke<std::uint16_t>(f, off_version, wire_version);
      poke<std::uint16_t>(f, off_kind, static_cast<std::uint16_t>(rng() % (std::variant_size_v<Message> + 2)));
      poke<std::uint32_t>(f, off_body_length, static_cast<std::uint32_t>(f.size() - header_bytes));
      poke<std::uint16_t>(f, off_payloads, 0);
      poke<std::uint16_t>(f, off_reserved, 0);
    }
    accepted += decode_checked(f, rng() % 3);
    if (HasFailure()) break;
  }
  // Some must pass the header checks (Heartbeat, Bye, Request...), or the loop tested little.
  EXPECT_GT(accepted, 0u);
}

TEST(CodecFuzz, RandomMutationsOfValidFrames) {
  std::mt19937_64 rng(2008);
  const auto frames = valid_frames();
  std::size_t accepted = 0, rejected = 0;
  for (int i = 0; i < 100000; ++i) {
    auto [f, payloads] = frames[rng() % frames.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 5) {
        case 0:  // flip a bit
          if (!f.empty()) f[rng() % f.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
          break;
        case 1:  // overwrite a byte
          if (!f.empty()) f[rng() % f.size()] = static_cast<std::byte>(rng());
          break;
        case 2:  // truncate
          f.resize(rng() % (f.size() + 1));
          break;
        case 3:  // insert a byte
          f.insert(f.begin() + static_cast<std::ptrdiff_t>(rng() % (f.size() + 1)), static_cast<std::byte>(rng()));
          break;
        case 4:  // keep the length field consistent after the other edits
          if (f.size() >= header_bytes)
            poke<std::uint32_t>(f, off_body_length, static_cast<std::uint32_t>(f.size() - header_bytes));
          break;
      }
    }
    if (decode_checked(f, payloads)) ++accepted; else ++rejected;
    if (HasFailure()) break;
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(rejected, 0u);
}

}  // namespace
}  // namespace treefarm::net

namespace treefarm::net {
namespace {
// Served trees (docs/serve.md): Shutdown's optional reset byte.
TEST(CodecServe, ShutdownCarriesResetOnlyWhenSetAndRejectsAnyOtherByte) {
  const Bytes plain = encode(Message{msg::Shutdown{"run complete"}});
  const Bytes reset = encode(Message{msg::Shutdown{"run complete", true}});
  EXPECT_EQ(reset.size(), plain.size() + 1) << "the reset byte is the only difference";
  EXPECT_FALSE(std::get<msg::Shutdown>(decode_frame(plain, 0)).reset);
  const auto back = std::get<msg::Shutdown>(decode_frame(reset, 0));
  EXPECT_TRUE(back.reset);
  EXPECT_EQ(back.reason, "run complete");
  Bytes bad = reset;
  bad.back() = std::byte{2};
  EXPECT_THROW(decode_frame(bad, 0), DecodeError);
}
// `treefarm status`: node states ride on a child's Heartbeat as an optional
// trailing list; an empty Heartbeat keeps its bytes; bad states are DecodeErrors.
TEST(CodecServe, HeartbeatCarriesNodeStatesOnlyWhenGivenAndChecksThem) {
  msg::Heartbeat h;
  h.loads = {msg::NodeLoad{"w1", 4, 3, 7, 1.25}, msg::NodeLoad{"w1a", 1, 0, 0, -1}};
  const Bytes frame = encode(Message{h});
  EXPECT_EQ(encode(Message{msg::Heartbeat{}}).size(), header_bytes) << "an empty Heartbeat grew";
  const auto back = std::get<msg::Heartbeat>(decode_frame(frame, 0));
  ASSERT_EQ(back.loads.size(), 2u);
  EXPECT_EQ(back.loads[0].name, "w1");
  EXPECT_EQ(back.loads[0].cores, 4u);
  EXPECT_EQ(back.loads[0].busy_cores, 3u);
  EXPECT_EQ(back.loads[0].queued, 7u);
  EXPECT_DOUBLE_EQ(back.loads[0].load1, 1.25);
  EXPECT_DOUBLE_EQ(back.loads[1].load1, -1);

  auto busier = h;
  busier.loads[1].busy_cores = 2;  // more busy cores than cores
  EXPECT_THROW(decode_frame(encode(Message{busier}), 0), DecodeError);
  auto nameless = h;
  nameless.loads[0].name.clear();
  EXPECT_THROW(decode_frame(encode(Message{nameless}), 0), DecodeError);
  auto below = h;
  below.loads[0].load1 = -2;
  EXPECT_THROW(decode_frame(encode(Message{below}), 0), DecodeError);
  Bytes zero = encode(Message{msg::Heartbeat{}});  // a count of 0 is not how an empty list is sent
  zero.insert(zero.end(), 4, std::byte{0});
  poke<std::uint32_t>(zero, off_body_length, 4);
  EXPECT_THROW(decode_frame(zero, 0), DecodeError);
  msg::Heartbeat many;
  many.loads.assign(max_loads + 1, msg::NodeLoad{"w", 1, 0, 0, 0});
  EXPECT_THROW(encode(Message{many}), std::invalid_argument);
  many.loads.pop_back();
  EXPECT_EQ(std::get<msg::Heartbeat>(decode_frame(encode(Message{many}), 0)).loads.size(), max_loads);
}
}  // namespace
}  // namespace treefarm::net
