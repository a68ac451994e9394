// tools/emulate/ChaosSoak: one minute of `treefarm bench chaos` as root — worker kills,
// network faults, master kills and a full --out, each master fault followed by --resume —
// records every task exactly once with none lost or wrong, and leaves nothing behind.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "tests/emulate/EmulationTestSupport.hpp"
#include "tools/emulate/ChaosSoak.hpp"
#include "tools/emulate/Program.hpp"

using namespace treefarm::emulate;
using namespace treefarm::emulate::testing;

TEST(ChaosSoak, OneMinuteOfEveryFaultLosesNoTaskAndGetsNoneWrong) {
  SKIP_UNLESS_EMULATION();
  const auto before = run_program({"ip", "netns", "list"}).out;
  SoakOptions o;
  o.minutes = 1;
  o.kill_interval = 3;
  o.fault_interval = 5;
  o.master_fault_interval = 8;  // several master faults within the minute: kills and a full disk in turn
  o.seed = 7;
  o.bin_dir = TREEFARM_BIN_DIR;
  std::atomic<bool> interrupted{false};
  std::ostringstream out;
  SoakFigures f;
  const int rc = chaos_soak(out, o, false, interrupted, &f);
  std::printf("%s", out.str().c_str());
  EXPECT_EQ(rc, 0) << out.str();
  EXPECT_TRUE(f.ok()) << out.str();
  EXPECT_EQ(f.lost, 0u);
  EXPECT_EQ(f.wrong, 0u);
  EXPECT_EQ(f.completed, f.tasks);
  EXPECT_EQ(f.distinct, f.tasks) << "a task recorded twice";
  EXPECT_GE(f.worker_kills, 1u) << out.str();
  EXPECT_GE(f.network_faults, 1u) << out.str();
  EXPECT_GE(f.master_kills, 1u) << out.str();
  EXPECT_GE(f.disk_full, 1u) << out.str();
  EXPECT_EQ(run_program({"ip", "netns", "list"}).out, before) << "namespaces left behind";
}
