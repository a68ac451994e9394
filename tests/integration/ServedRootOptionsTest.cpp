// A served root runs each submitted experiment with that experiment's own root options
// (docs/serve.md): its migration, balance and the master node's declared
// memory and speed reach the root's node driver, as they do under `treefarm-master FILE`.
// Real processes on loopback: `treefarm-master --serve` m and one worker w under it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"

using namespace treefarm::testing;

TEST(ServedRoot, ASubmittedExperimentsRootOptionsReachTheServedRoot) {
  TempDir dir;
  const std::string w = "sro" + std::to_string(getpid());
  Child master(served_master_args(dir), dir.path() / "master.log");
  const auto mep = wait_for_line(dir.path() / "m.ep");
  const auto sep = wait_for_line(dir.path() / "submit.ep");
  ASSERT_FALSE(mep.empty() || sep.empty()) << master.output();
  Child worker({worker_bin, "--parent", mep, "--name", w, "--cores", "1", "--listen", ""}, dir.path() / "w.log");

  // Two experiments with different root options, one after the other on the same root.
  const auto experiment = [&](const std::string& run, const std::string& master_node) {
    return "[[node]]\nname = \"m\"\ncores = 0\n" + master_node + "\n[[node]]\nname = \"" + w +
           "\"\nparent = \"m\"\ncores = 1\n\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 64\ntasks = 40\n\n[run]\n" +
           run;
  };
  const auto first = write_file(dir.path() / "first.toml",
                                experiment("migration = \"push\"\nbalance = \"tll\"\n", "memory = 123456789\nspeed = 3e9\n"));
  const auto second = write_file(dir.path() / "second.toml", experiment("migration = \"pull\"\n", ""));
  for (const auto& file : {first, second}) {
    const auto r = run_command(treefarm_bin + " submit " + file + " --to " + sep + " --timeout 120");
    ASSERT_EQ(r.exit_code, 0) << r.output << master.output();
  }
  const std::string log = master.output();
  EXPECT_NE(log.find("m: run with migration push, balance tll, memory 123456789 bytes, speed 3e+09 flop/s"),
            std::string::npos)
      << log;
  // The second run does not inherit the first one's settings.
  EXPECT_NE(log.find("m: run with migration pull, balance off, memory "), std::string::npos) << log;
  EXPECT_EQ(log.find("m: run with migration pull, balance off, memory 123456789 bytes"), std::string::npos) << log;
}
