// A link's bandwidth estimate from the run's transfers (runtime/node/Estimates.hpp, through
// runtime/core/LinkFit.hpp): small transfers measure the latency, not the bandwidth.
#include <gtest/gtest.h>

#include "runtime/node/Estimates.hpp"

namespace treefarm::node {
namespace {

TEST(EstimatesLink, SmallTransfersDoNotPullTheBandwidthDownToTheirLatency) {
  // 4 KiB no-op tasks and 4 MiB matmul inputs on one link: 100 µs latency, 2 GB/s.
  Estimates e;
  e.configure("w1", 1, {}, {});
  for (int i = 0; i < 60; ++i) {
    const double bytes = i % 3 == 0 ? 4194304.0 : 4096.0;
    e.transfer("w2", bytes, 1e-4 + bytes / 2e9);
  }
  ASSERT_NE(e.link("w2"), nullptr);
  EXPECT_NEAR(e.link("w2")->mean(), 2e9, 0.03 * 2e9) << "bytes/seconds per transfer would give ~7e8";
}

TEST(EstimatesLink, OneSizeOnlyLargeTransfersAreSamplesSmallOnesAreNot) {
  Estimates e;
  e.configure("w1", 1, {}, {});
  for (int i = 0; i < 20; ++i) e.transfer("small", 4096, 1e-4);
  EXPECT_EQ(e.link("small"), nullptr) << "latency only: no bandwidth estimate";
  for (int i = 0; i < 5; ++i) e.transfer("big", 1e6, 0.01);
  ASSERT_NE(e.link("big"), nullptr);
  EXPECT_NEAR(e.link("big")->mean(), 1e8, 1);
}

TEST(EstimatesLink, TheShiftTestStillSeesALinkThatSlowedDown) {
  Estimates e;
  e.configure("w1", 1, {}, {});
  for (int i = 0; i < 40; ++i) {
    const double bytes = i % 2 ? 4096.0 : 4194304.0;
    e.transfer("w2", bytes, 1e-4 + bytes / 2e9);
  }
  ASSERT_EQ(e.link("w2")->shifts(), 0u) << "a steady link does not shift";
  for (int i = 0; i < 40; ++i) {
    const double bytes = i % 2 ? 4096.0 : 4194304.0;
    e.transfer("w2", bytes, 1e-4 + bytes / 5e8);
  }
  EXPECT_GE(e.link("w2")->shifts(), 1u);
  EXPECT_NEAR(e.link("w2")->mean(), 5e8, 0.1 * 5e8);
}

}  // namespace
}  // namespace treefarm::node
