// Online estimates on the wire (docs/live-model.md, docs/protocol.md): a Heartbeat's
// optional trailing list after its node states; every figure is checked on decode.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <span>
#include <variant>
#include <vector>

#include "runtime/net/Codec.hpp"

namespace treefarm::net {
namespace {

using msg::Estimate;
using Bytes = std::vector<std::byte>;

Message decode_frame(const Bytes& frame, std::size_t payloads) { return decode(std::span<const std::byte>(frame), payloads); }

Estimate task_estimate() { return Estimate{"w1", Estimate::What::task_seconds, 1, 0.75, 0.05, 40, 1}; }

TEST(EstimateCodec, RoundTripWithAndWithoutNodeStates) {
  msg::Heartbeat h;
  h.estimates = {task_estimate(), Estimate{"w2", Estimate::What::link_bandwidth, 0, 1.5e8, 2e7, 12, 0},
                 Estimate{"w2", Estimate::What::process_cpu_seconds, 0, 12.25, 0, 1, 0},
                 Estimate{"w2", Estimate::What::compute_cpu_seconds, 1, 7.5, 0, 300, 0}};
  const auto back = std::get<msg::Heartbeat>(decode_frame(encode(Message{h}), 0));
  EXPECT_TRUE(back.loads.empty());
  ASSERT_EQ(back.estimates.size(), 4u);
  EXPECT_EQ(back.estimates[2].what, Estimate::What::process_cpu_seconds);
  EXPECT_DOUBLE_EQ(back.estimates[2].mean, 12.25);
  EXPECT_EQ(back.estimates[3].what, Estimate::What::compute_cpu_seconds);
  EXPECT_EQ(back.estimates[3].app, 1u);
  EXPECT_DOUBLE_EQ(back.estimates[3].mean, 7.5);
  EXPECT_EQ(back.estimates[3].samples, 300u);
  h.estimates.pop_back();
  h.estimates.pop_back();
  EXPECT_EQ(back.estimates[0].node, "w1");
  EXPECT_EQ(back.estimates[0].app, 1u);
  EXPECT_DOUBLE_EQ(back.estimates[0].mean, 0.75);
  EXPECT_DOUBLE_EQ(back.estimates[0].spread, 0.05);
  EXPECT_EQ(back.estimates[0].samples, 40u);
  EXPECT_EQ(back.estimates[0].shifts, 1u);
  EXPECT_EQ(back.estimates[1].what, Estimate::What::link_bandwidth);

  h.loads = {msg::NodeLoad{"w1", 1, 1, 3, 0.5}};
  const auto both = std::get<msg::Heartbeat>(decode_frame(encode(Message{h}), 0));
  EXPECT_EQ(both.loads.size(), 1u);
  EXPECT_EQ(both.estimates.size(), 2u);
  // Node states alone keep their bytes (no estimate count).
  msg::Heartbeat loads_only;
  loads_only.loads = h.loads;
  EXPECT_EQ(encode(Message{loads_only}).size() + 4 + 2 + 2 + 1 + 2 + 8 + 8 + 4 + 4,
            encode(Message{msg::Heartbeat{loads_only.loads, {task_estimate()}}}).size());
}

TEST(EstimateCodec, HostileFiguresAreDecodeErrors) {
  const auto bad = [](Estimate e) {
    msg::Heartbeat h;
    h.estimates = {e};
    return encode(Message{h});
  };
  auto e = task_estimate();
  e.mean = 0;
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  e = task_estimate();
  e.mean = -1;
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  e = task_estimate();
  e.mean = std::numeric_limits<double>::infinity();
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  e = task_estimate();
  e.spread = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  e = task_estimate();
  e.spread = -0.5;
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  e = task_estimate();
  e.node.clear();
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  e = task_estimate();
  e.shifts = e.samples + 1;
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  e = task_estimate();
  e.app = static_cast<std::uint16_t>(max_apps);
  EXPECT_THROW(decode_frame(bad(e), 0), DecodeError);
  // An unknown kind: the byte after the node's name.
  auto frame = bad(task_estimate());
  const std::size_t what_at = header_bytes + 4 + 4 + 2 + 2;  // loads 0, estimates 1, name "w1"
  ASSERT_EQ(std::to_integer<int>(frame[what_at]), 0);
  frame[what_at] = std::byte{4};  // the first kind beyond compute_cpu_seconds
  EXPECT_THROW(decode_frame(frame, 0), DecodeError);
  frame[what_at] = std::byte{7};
  EXPECT_THROW(decode_frame(frame, 0), DecodeError);
  // Truncated: every cut is an error, never a crash.
  const auto whole = bad(task_estimate());
  for (std::size_t n = header_bytes + 1; n < whole.size(); ++n) {
    std::vector<std::byte> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    const std::uint32_t body = static_cast<std::uint32_t>(n - header_bytes);
    std::memcpy(cut.data() + 8, &body, sizeof body);  // the header's body length
    EXPECT_THROW(decode_frame(cut, 0), DecodeError) << "cut at " << n;
  }
}

TEST(EstimateCodec, TooManyIsRefusedOnBothSides) {
  msg::Heartbeat h;
  h.estimates.assign(max_estimates + 1, task_estimate());
  EXPECT_THROW(encode(Message{h}), std::invalid_argument);
  h.estimates.pop_back();
  EXPECT_EQ(std::get<msg::Heartbeat>(decode_frame(encode(Message{h}), 0)).estimates.size(), max_estimates);
}

}  // namespace
}  // namespace treefarm::net
