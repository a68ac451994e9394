// A node's speed, when an application requires one, is measured by the adapter, not inside
// the driver (a matmul blocks): the driver asks through LocalRunner::measure_speed, waits
// in Phase::measuring with what the parent sends meanwhile held in order, and carries on
// once on_speed_measured brings the figure. Also: the driver logs through the sink given.
#include "runtime/node/NodeDriver.hpp"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using namespace testing;  // RecordingTransport.hpp

/// A runner whose adapter can measure the speed (when `can_measure`), counting the asks.
class MeasuringRunner final : public LocalRunner {
 public:
  explicit MeasuringRunner(bool can_measure) : can_measure_(can_measure) {}
  std::uint32_t cores() const override { return 1; }
  void start(std::uint64_t, const model::AppSpec&, const Payload&) override { ++started; }
  Payload calibration_input(const model::AppSpec& app, std::uint64_t, std::uint32_t) override {
    return std::make_shared<SizeOnly>(app.input_bytes());
  }
  bool measure_speed() override {
    ++asked;
    return can_measure_;
  }
  int asked = 0;
  int started = 0;

 private:
  bool can_measure_;
};

net::msg::Welcome needs_speed(double min_speed) {
  net::msg::Welcome w = welcome();
  w.apps[0].min_speed = min_speed;
  return w;
}

TEST(SpeedDriver, TheAdapterMeasuresAndTheParentsMessagesWaitInOrder) {
  RecordingTransport t;
  MeasuringRunner r(true);
  NodeDriver d(quiet_options("w"), t, &r, std::nullopt);
  d.start(0);
  t.sent.clear();
  d.on_parent_message(needs_speed(1e6), {}, 0.1);
  EXPECT_EQ(r.asked, 1);
  EXPECT_TRUE(t.take<net::msg::Request>(parent).empty()) << "asked for work before its speed was known";
  d.on_parent_message(net::msg::Probe{7}, {}, 0.2);
  EXPECT_TRUE(t.take<net::msg::ProbeAck>(parent).empty()) << "answered the parent while measuring";
  d.on_timer(1000);  // far past the join timeout: the Welcome came, no rejoin
  EXPECT_EQ(t.restarts, 0);
  EXPECT_FALSE(d.finished());

  d.on_speed_measured(1e9, 0.5);
  EXPECT_FALSE(t.take<net::msg::Request>(parent).empty()) << "fast enough: it asks for tasks";
  auto acks = t.take<net::msg::ProbeAck>(parent);
  ASSERT_EQ(acks.size(), 1u) << "the held message was not handled after the measurement";
  EXPECT_EQ(acks[0].first.seq, 7u);
}

TEST(SpeedDriver, TheMeasuredSpeedDecidesWhatTheNodeSaysItCanRun) {
  for (const double speed : {1e9, 1e13}) {
    RecordingTransport t;
    MeasuringRunner r(true);
    NodeDriver d(quiet_options("w"), t, &r, std::nullopt);
    d.start(0);
    d.on_parent_message(needs_speed(1e12), {}, 0.1);
    EXPECT_TRUE(t.take<net::msg::Capacity>(parent).empty()) << "told its capacity before its speed was known";
    d.on_speed_measured(speed, 0.5);
    auto capacity = t.take<net::msg::Capacity>(parent);
    ASSERT_EQ(capacity.size(), 1u) << "speed " << speed;
    ASSERT_EQ(capacity[0].first.fits.size(), 1u);
    EXPECT_EQ(static_cast<bool>(capacity[0].first.fits[0]), speed >= 1e12)
        << speed << " flop/s per core against a min_speed of 1e12";
  }
}

TEST(SpeedDriver, WithoutAMeasurementOrAKnownSpeedTheNodeGoesOnAtOnce) {
  RecordingTransport t;
  MeasuringRunner r(false);
  NodeDriver d(quiet_options("w"), t, &r, std::nullopt);
  d.start(0);
  d.on_parent_message(needs_speed(1e6), {}, 0.1);
  EXPECT_EQ(r.asked, 1);
  EXPECT_FALSE(t.take<net::msg::Request>(parent).empty()) << "an unknown speed counts as sufficient";

  MeasuringRunner known(true);
  NodeOptions o = quiet_options("k");
  o.speed = 5e9;
  NodeDriver k(o, t, &known, std::nullopt);
  k.start(0);
  k.on_parent_message(needs_speed(1e6), {}, 0.1);
  EXPECT_EQ(known.asked, 0) << "measured a speed the options give";
}

TEST(SpeedDriver, LogLinesGoToTheSinkTheAdapterGives) {
  RecordingTransport t;
  std::vector<std::pair<LogLevel, std::string>> lines;
  NodeOptions o = quiet_options("w");
  o.log = [&](LogLevel level, const std::string& line) { lines.emplace_back(level, line); };
  NodeDriver d(o, t, nullptr, std::nullopt);
  d.start(0);
  d.on_parent_message(welcome(), {}, 0.1);
  d.on_child_message(PeerId{1}, net::msg::Hello{"c", 1, 0}, {}, 0.2);
  d.on_child_message(PeerId{1}, net::msg::Request{99}, {}, 0.3);
  bool joined = false, dropped = false;
  for (const auto& [level, line] : lines) {
    if (level == LogLevel::info && line == "w: child 'c' joined (1 cores)") joined = true;
    if (level == LogLevel::warn && line.starts_with("w: dropping child 'c': asked for 99 tasks")) dropped = true;
  }
  EXPECT_TRUE(joined) << "no info line for the join";
  EXPECT_TRUE(dropped) << "no warning for the drop";
}

}  // namespace
}  // namespace treefarm::node
