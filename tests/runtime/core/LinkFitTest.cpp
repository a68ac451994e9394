// A link's transfers fitted as seconds = latency + bytes / bandwidth (runtime/core/LinkFit.hpp),
// and the bandwidth-centric order the scheduler draws from them (NodeScheduler,
// TransferObserved): small transfers measure the latency, not the bandwidth.
#include "runtime/core/LinkFit.hpp"

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

double seconds_of(double bytes, double latency, double bandwidth) { return latency + bytes / bandwidth; }

TEST(LinkFit, FitsTheLatencyAndSmallTransfersAreNoSamples) {
  LinkFit f;
  for (int i = 0; i < 10; ++i) {
    const double bytes = i % 2 ? 4096.0 : 4194304.0;
    f.add(bytes, seconds_of(bytes, 1e-4, 2e9));
  }
  ASSERT_TRUE(f.latency());
  EXPECT_NEAR(*f.latency(), 1e-4, 1e-6);
  EXPECT_FALSE(f.add(4096, seconds_of(4096, 1e-4, 2e9))) << "mostly latency: no bandwidth sample";
  const auto big = f.add(4194304, seconds_of(4194304, 1e-4, 2e9));
  ASSERT_TRUE(big);
  EXPECT_NEAR(*big, 2e9, 1e-3 * 2e9);
}

TEST(LinkFit, OneSmallSizeLeavesTheLatencyUnknownAndGivesNoSample) {
  LinkFit f;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(f.add(4096, 1e-4));
  EXPECT_FALSE(f.latency());
  const auto big = f.add(1e6, 0.01);  // a second size: the fit now has a latency too
  ASSERT_TRUE(big);
  EXPECT_NEAR(*big, 1e8, 0.01 * 1e8);
  EXPECT_FALSE(f.add(0, 1)) << "not positive: ignored";
}

// Two links under mixed 4 KiB / 4 MiB tasks: "far" carries 4 GB/s behind 1 ms of latency,
// "near" 1 GB/s behind 10 µs. Per transfer, bytes/seconds of a 4 KiB task is 4 MB/s on far
// and 290 MB/s on near, so a mean over transfers (EWMA 0.2: near 3.8e8, far 2.6e8 bytes/s)
// ranks near first; the fit ranks far first.
TEST(LinkFit, MixedTaskSizesOrderTwoLinksByBandwidthNotLatency) {
  auto node = make_node(node_config(false, 6, {app("a", 1, 20)}, /*one_port=*/false), "cgbc");
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, ChildInfo{"near", 1, 0}}, 0);
  node->handle(event::ChildJoined{ChildId{2}, ChildInfo{"far", 1, 0}}, 0);
  for (int i = 0; i < 30; ++i) {  // four small tasks per large one, the last four small
    const double bytes = i % 5 == 0 ? 4194304.0 : 4096.0;
    node->handle(event::TransferObserved{ChildId{1}, bytes, seconds_of(bytes, 1e-5, 1e9)}, 0);
    node->handle(event::TransferObserved{ChildId{2}, bytes, seconds_of(bytes, 1e-3, 4e9)}, 0);
  }
  node->handle(event::WorkRequested{child(1), 1}, 1);
  node->handle(event::WorkRequested{child(2), 1}, 1);
  const auto first = names(node->handle(event::TaskArrived{task(0, 0)}, 2));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0], "SendTask child 2 0:0") << "the 4 GB/s link first, whatever its latency";
}

}  // namespace
}  // namespace treefarm::core::testing
