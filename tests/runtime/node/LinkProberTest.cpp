// The calibration's link probes, on scripted acknowledgements.
#include "runtime/node/LinkProber.hpp"

#include <gtest/gtest.h>

namespace treefarm::node {
namespace {

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
};

TEST(LinkProber, MeasuresOneLinkFromStreamedProbesMinusTheRoundTrip) {
  Probed p;
  p.prober.child_joined(PeerId{1}, "c", 0.0);
  double now = 0;
  for (int i = 0; i < LinkProber::small_probes; ++i) {
    ASSERT_EQ(p.sent.size(), 1u);
    EXPECT_EQ(std::get<2>(p.sent[0]), 1u);
    now += 0.001;  // 1 ms round trip
    p.ack_all(now);
  }
  ASSERT_EQ(p.sent.size(), static_cast<std::size_t>(LinkProber::big_probes));
  // 8 × 1000 bytes acknowledged 8 ms + 1 ms overhead later: 1e6 bytes/s.
  now += 0.009;
  p.ack_all(now);
  ASSERT_EQ(p.reports.size(), 1u);
  EXPECT_EQ(p.reports[0].node, "c");
  EXPECT_EQ(p.reports[0].what, net::msg::Measure::What::link_bandwidth);
  EXPECT_NEAR(p.reports[0].value, 1e6, 1e3);
}

TEST(LinkProber, OneChildAtATimeThenAllTogether) {
  Probed p;
  p.prober.child_joined(PeerId{1}, "a", 0.0);
  p.prober.child_joined(PeerId{2}, "b", 0.0);
  for (const auto& s : p.sent) EXPECT_EQ(std::get<0>(s), PeerId{1}) << "probed two links at once";
  double now = 0;
  while (p.reports.size() < 2 && now < 1) {
    now += 0.001;
    p.ack_all(now);
  }
  ASSERT_EQ(p.reports.size(), 2u);
  // Then the fan-out: both children at once.
  std::set<std::uint32_t> peers;
  for (const auto& s : p.sent) peers.insert(std::get<0>(s).value);
  EXPECT_EQ(peers, (std::set<std::uint32_t>{1, 2}));
  now += 0.016;
  p.ack_all(now);
  ASSERT_EQ(p.reports.size(), 3u);
  EXPECT_EQ(p.reports[2].what, net::msg::Measure::What::out_bandwidth);
  EXPECT_GT(p.reports[2].value, 0);
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

}  // namespace
}  // namespace treefarm::node
