/// Tests of runtime/exec/InlineCpu: the loop thread's CPU read once per burst of inline
/// tasks and shared among the applications by their kernels' wall time.
#include "runtime/exec/InlineCpu.hpp"

#include <gtest/gtest.h>

namespace treefarm::exec {
namespace {

TEST(InlineCpu, ABurstReadsTheClockTwiceAndSharesItsCpuByKernelSeconds) {
  double cpu = 10.0;
  InlineCpu c([&] { return cpu; });
  const int a = 0, b = 0;  // two applications (keys only)
  c.begin(100.0);
  for (int i = 0; i < 50; ++i) {
    c.begin(100.0 + i * 0.01);  // already open: no read
    c.ran(&a, 0.004);           // 50 x 4 ms of application a
    c.ran(&b, 0.002);           // 50 x 2 ms of application b
  }
  EXPECT_EQ(c.reads(), 1u);
  EXPECT_DOUBLE_EQ(c.take(&a), 0.0) << "nothing is owed before the window closes";
  cpu = 10.4;  // 0.4 CPU seconds over 0.5 s of wall: the thread waited a fifth of the time
  c.close(100.5);
  EXPECT_EQ(c.reads(), 2u);
  EXPECT_FALSE(c.open());
  // 0.8 CPU s per wall s: a's kernels ran 0.2 s (0.16 CPU s), b's 0.1 s (0.08 CPU s); the
  // loop's own 0.2 s between them are nobody's.
  EXPECT_NEAR(c.take(&a), 0.16, 1e-12);
  EXPECT_NEAR(c.take(&b), 0.08, 1e-12);
  EXPECT_DOUBLE_EQ(c.take(&a), 0.0) << "taken once";
}

TEST(InlineCpu, OwedCpuAddsUpOverWindowsAndNeverExceedsTheWallTime) {
  double cpu = 0.0;
  InlineCpu c([&] { return cpu; });
  const int a = 0;
  c.begin(0.0);
  c.ran(&a, 0.5);
  cpu = 2.0;  // more CPU than wall (a clock's granularity): one thread, at most 1 s per s
  c.close(1.0);
  c.begin(5.0);
  c.ran(&a, 0.25);
  cpu = 2.5;
  c.close(6.0);
  EXPECT_NEAR(c.take(&a), 0.5 + 0.125, 1e-12);
}

TEST(InlineCpu, AWindowClosesAtAHandOverOnlyOnceItIsLong) {
  double cpu = 0.0;
  InlineCpu c([&] { return cpu; });
  c.begin(0.0);
  c.close_if_long(InlineCpu::max_window_seconds / 2);
  EXPECT_TRUE(c.open());
  c.close_if_long(InlineCpu::max_window_seconds);
  EXPECT_FALSE(c.open());
  EXPECT_EQ(c.reads(), 2u);
  c.close_if_long(10.0);  // none open: no read
  EXPECT_EQ(c.reads(), 2u);
}

}  // namespace
}  // namespace treefarm::exec
