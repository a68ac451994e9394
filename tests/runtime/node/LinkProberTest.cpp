// The calibration's link probes, on scripted acknowledgements.
#include "runtime/node/LinkProber.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

namespace treefarm::node {
namespace {

using What = net::msg::Measure::What;

struct Probed {
  std::vector<std::tuple<PeerId, std::uint32_t, std::size_t>> sent;
  std::vector<net::msg::Measure> reports;
  LinkProber prober{"p", std::make_shared<SizeOnly>(1), std::make_shared<SizeOnly>(1000),
                    [this](PeerId peer, std::uint32_t seq, const Payload& p) { sent.emplace_back(peer, seq, p->size()); },
                    [this](const net::msg::Measure& m) { reports.push_back(m); }};
  /// Acknowledges everything sent so far at time `now`, in order.
  void ack_all(double now) {
    auto batch = std::move(sent);
    sent.clear();
    for (auto& [peer, seq, size] : batch) prober.on_ack(peer, seq, now);
  }
  /// One round on one child: ping-pongs of `rtt` seconds, then the 8 big probes
  /// acknowledged `stream` seconds after they went. Returns the time after it.
  double round(double now, double rtt, double stream) {
    for (int i = 0; i < LinkProber::small_probes; ++i) {
      EXPECT_EQ(sent.size(), 1u);
      if (!sent.empty()) {
        EXPECT_EQ(std::get<2>(sent[0]), 1u);
      }
      now += rtt;
      ack_all(now);
    }
    EXPECT_EQ(sent.size(), static_cast<std::size_t>(LinkProber::big_probes));
    now += stream;
    ack_all(now);
    return now;
  }
  std::optional<double> value(What what, const std::string& node) const {
    for (const auto& m : reports)
      if (m.what == what && m.node == node) return m.value;
    return std::nullopt;
  }
};

TEST(LinkProber, MeasuresOneLinkFromStreamedProbesMinusTheRoundTrip) {
  Probed p;
  p.prober.child_joined(PeerId{1}, "c", 0.0);
  double now = 0;
  // 8 × 1000 bytes acknowledged 8 ms + 1 ms overhead later: 1e6 bytes/s, every round.
  for (int r = 0; r < LinkProber::rounds; ++r) {
    EXPECT_TRUE(p.reports.empty()) << "reported after " << r << " rounds";
    now = p.round(now, 0.001, 0.009);
  }
  ASSERT_EQ(p.reports.size(), 4u);
  EXPECT_EQ(p.reports.back().what, What::link_bandwidth) << "the median must come last: the master counts it";
  EXPECT_EQ(p.reports.back().node, "c");
  EXPECT_NEAR(*p.value(What::link_bandwidth, "c"), 1e6, 1e3);
  EXPECT_NEAR(*p.value(What::link_bandwidth_min, "c"), 1e6, 1e3);
  EXPECT_NEAR(*p.value(What::link_bandwidth_max, "c"), 1e6, 1e3);
  EXPECT_NEAR(*p.value(What::link_round_trip, "c"), 0.001, 1e-9);
  EXPECT_TRUE(p.sent.empty()) << "one child: no fan-out";
}

TEST(LinkProber, ReportsTheMedianRoundAndTheSpread) {
  Probed p;
  p.prober.child_joined(PeerId{1}, "c", 0.0);
  double now = 0;
  // Streams of 8000 bytes in (stream - 1 ms): 8e6, 1e6 (descheduled), 4e6, 2e6, 8e5.
  const double streams[] = {0.002, 0.009, 0.003, 0.005, 0.011};
  const double rtts[] = {0.001, 0.001, 0.001, 0.001, 0.001};
  for (int r = 0; r < LinkProber::rounds; ++r) now = p.round(now, rtts[r], streams[r]);
  EXPECT_NEAR(*p.value(What::link_bandwidth, "c"), 2e6, 1e3) << "the median, not the mean (3.16e6) nor the last";
  EXPECT_NEAR(*p.value(What::link_bandwidth_min, "c"), 8e5, 1e3);
  EXPECT_NEAR(*p.value(What::link_bandwidth_max, "c"), 8e6, 1e3);
}

TEST(LinkProber, RoundsAlternateBetweenChildrenThenAllTogether) {
  Probed p;
  p.prober.child_joined(PeerId{1}, "a", 0.0);
  p.prober.child_joined(PeerId{2}, "b", 0.0);
  std::vector<std::uint32_t> order;  // which child each round probed
  double now = 0;
  for (int r = 0; r < 2 * LinkProber::rounds; ++r) {
    ASSERT_FALSE(p.sent.empty());
    std::set<std::uint32_t> peers;
    for (const auto& s : p.sent) peers.insert(std::get<0>(s).value);
    ASSERT_EQ(peers.size(), 1u) << "probed two links at once";
    order.push_back(*peers.begin());
    now = p.round(now, 0.001, 0.009);
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 2, 1, 2, 1, 2, 1, 2, 1, 2}));
  ASSERT_TRUE(p.value(What::link_bandwidth, "a"));
  ASSERT_TRUE(p.value(What::link_bandwidth, "b"));
  // Then the fan-out: both children at once, `rounds` times, one report.
  for (int r = 0; r < LinkProber::rounds; ++r) {
    std::set<std::uint32_t> peers;
    for (const auto& s : p.sent) peers.insert(std::get<0>(s).value);
    ASSERT_EQ(peers, (std::set<std::uint32_t>{1, 2})) << "fan-out round " << r;
    EXPECT_FALSE(p.value(What::out_bandwidth, "p"));
    now += 0.016;
    p.ack_all(now);
  }
  ASSERT_TRUE(p.value(What::out_bandwidth, "p"));
  EXPECT_GT(*p.value(What::out_bandwidth, "p"), 0);
  EXPECT_TRUE(p.sent.empty());
}

// The fan-out's aggregate is the sum of what every link carried until the first child
// had all its probes, the probe under way on a slower link included: a fast
// child of 1e6 bytes/s and a slow one of 1e5 bytes/s make 1.1e6 bytes/s, not the 1e6 of
// whole acknowledged probes (the slow child has none yet when the fast one is done).
TEST(LinkProber, FanOutCountsTheProbeUnderWayOnSlowerLinks) {
  Probed p;
  p.prober.child_joined(PeerId{1}, "fast", 0.0);
  p.prober.child_joined(PeerId{2}, "slow", 0.0);
  double now = 0;
  for (int r = 0; r < 2 * LinkProber::rounds; ++r) now = p.round(now, 0.001, 0.009);
  for (int r = 0; r < LinkProber::rounds; ++r) {
    ASSERT_EQ(p.sent.size(), 2u * LinkProber::big_probes) << "fan-out round " << r;
    const double t0 = now + 0.001;  // the smallest round trip: when the first bytes arrive
    std::vector<std::tuple<double, PeerId, std::uint32_t>> acks;
    for (const auto& [peer, seq, size] : p.sent) {
      const double per_probe = peer.value == 1 ? 0.001 : 0.01;  // 1000 bytes at 1e6 or 1e5 bytes/s
      acks.emplace_back(t0 + per_probe * static_cast<double>((seq & ~LinkProber::fanout_bit) + 1), peer, seq);
    }
    std::sort(acks.begin(), acks.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    p.sent.clear();
    for (const auto& [at, peer, seq] : acks) p.prober.on_ack(peer, seq, at);
    now = std::get<0>(acks.back());
  }
  ASSERT_TRUE(p.value(What::out_bandwidth, "p"));
  EXPECT_NEAR(*p.value(What::out_bandwidth, "p"), 1.1e6, 1e3);
}

TEST(LinkProber, AChildThatLeavesMidProbeDoesNotStallTheOthers) {
  Probed p;
  p.prober.child_joined(PeerId{1}, "a", 0.0);
  p.prober.child_joined(PeerId{2}, "b", 0.0);
  p.sent.clear();
  p.prober.child_left(PeerId{1}, 0.1);
  ASSERT_FALSE(p.sent.empty());
  EXPECT_EQ(std::get<0>(p.sent[0]), PeerId{2});
}

TEST(BandwidthSummary, UnresolvedRoundsCountAsInfinitelyFast) {
  const auto s = summarize_bandwidths({3e6, 0, 1e6, 0, 0});
  EXPECT_EQ(s.median, 0) << "three of five rounds unresolved: the median is too";
  EXPECT_EQ(s.min, 1e6);
  EXPECT_EQ(s.max, 0);
  const auto t = summarize_bandwidths({3e6, 0, 1e6, 2e6});
  EXPECT_EQ(t.median, 2.5e6);
}

}  // namespace
}  // namespace treefarm::node
