// Tree repair (docs/fault-tolerance.md), with real processes on loopback: in a
// tree master -> w1 -> w2, w1 is killed with -9 in the middle of the run; w2, orphaned,
// tries w1 again, then rejoins the master (the ancestor Welcome announced) and keeps
// working. The master has no cores, so the run can complete only if w2 rejoined it. Every
// task is recorded exactly once and none is wrong: the tasks that were in w1's subtree are
// re-queued by the master and done again.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {


std::string chain_experiment(const std::string& w1, const std::string& w2, std::uint64_t tasks) {
  return "[[node]]\nname = \"m\"\ncores = 0\n[[node]]\nname = \"" + w1 + "\"\nparent = \"m\"\ncores = 1\n[[node]]\nname = \"" +
         w2 + "\"\nparent = \"" + w1 + "\"\ncores = 1\n[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 512\ntasks = " +
         std::to_string(tasks) + "\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 4096\nweight = 2\ntasks = " +
         std::to_string(2 * tasks) + "\n[run]\nbuffer = 4\n";
}

/// Runs master -> w1 -> w2, kills w1 at a third of the run, checks the repair. `curve`:
/// every link encrypted and authenticated, one authorized_keys for the whole tree.
void kill_the_inner_worker(bool curve) {
  TempDir dir;
  const std::string tag = (curve ? "rc" : "rp") + std::to_string(getpid());
  const std::string w1 = tag + "w1", w2 = tag + "w2";
  // ~5 s of work on two cores of a 2026 machine (n = 320 ended within the first progress line
  // on CI, before the kill).
  const std::uint64_t tasks = 1200;
  const auto exp = write_file(dir.path() / "chain.toml", chain_experiment(w1, w2, tasks));
  const auto keys = (dir.path() / "keys").string();
  auto secure = [&](const std::string& name, const std::string& parent) -> std::vector<std::string> {
    if (!curve) return {};
    return {"--curve-secret", keys + "/" + name + ".key_secret", "--parent-key", keys + "/" + parent + ".key",
            "--authorized-keys", keys + "/authorized_keys"};
  };
  if (curve) {
    ASSERT_EQ(run_command(treefarm_bin + " keygen m " + w1 + " " + w2 + " --out " + keys).exit_code, 0);
  }
  std::vector<std::string> margs{master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out",
                                 (dir.path() / "out").string(), "--wait-workers", "2", "--heartbeat-timeout", "2",
                                 "--heartbeat-interval", "0.3"};
  if (curve) margs.insert(margs.end(), {"--curve-secret", keys + "/m.key_secret", "--authorized-keys", keys + "/authorized_keys"});
  Child master(margs, dir.path() / "master.log");
  const auto mep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(mep.empty()) << master.output();
  auto w1args = std::vector<std::string>{worker_bin, "--parent", mep, "--name", w1, "--cores", "1", "--ready-file",
                                         (dir.path() / "w1.ep").string(), "--heartbeat-timeout", "2", "--heartbeat-interval", "0.3"};
  const auto s1 = secure(w1, "m");
  w1args.insert(w1args.end(), s1.begin(), s1.end());
  Child inner(w1args, dir.path() / "w1.log");
  const auto w1ep = wait_for_line(dir.path() / "w1.ep");
  ASSERT_FALSE(w1ep.empty()) << inner.output();
  auto w2args = std::vector<std::string>{worker_bin, "--parent", w1ep, "--name", w2, "--cores", "1", "--listen", "",
                                         "--heartbeat-timeout", "2", "--heartbeat-interval", "0.3"};
  if (curve) w2args.insert(w2args.end(), {"--curve-secret", keys + "/" + w2 + ".key_secret", "--parent-key", keys + "/" + w1 + ".key"});
  Child leaf(w2args, dir.path() / "w2.log");

  // Both compute before the kill; the leaf's tasks came through w1.
  ASSERT_TRUE(wait_until([&] { return progress_done(master.output()) > 3 * tasks / 10; }, 120)) << master.output();
  ASSERT_EQ(master.output().find("all tasks done"), std::string::npos) << "the run ended before the kill:\n" << master.output();
  kill(inner.pid(), SIGKILL);
  ASSERT_TRUE(inner.wait(10).has_value());

  const auto rc = master.wait(180);
  ASSERT_TRUE(rc.has_value()) << master.output() << "\n--- w2:\n" << leaf.output();
  EXPECT_EQ(*rc, 0) << master.output() << "\n--- w2:\n" << leaf.output();
  const auto lrc = leaf.wait(30);
  ASSERT_TRUE(lrc.has_value()) << leaf.output();
  EXPECT_EQ(*lrc, 0) << "the orphan did not end cleanly:\n" << leaf.output();

  // The orphan tried its parent, then the master, and joined the master.
  const auto log = leaf.output();
  EXPECT_NE(log.find("trying ancestor 'm' at " + mep), std::string::npos) << log;
  EXPECT_NE(log.find("joined 'm'"), std::string::npos) << log;
  EXPECT_NE(master.output().find("child '" + w2 + "' joined"), std::string::npos) << master.output();

  // Every task exactly once, none wrong; the orphan computed after w1's last result.
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  std::set<std::pair<std::string, std::uint64_t>> seen;
  double w1_last = 0, w2_last = 0;
  std::uint64_t by_w1 = 0, by_w2 = 0;
  for (const auto& t : j.at("tasks")) {
    EXPECT_TRUE(seen.insert({t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()}).second);
    const auto node = t.at("node").get<std::string>();
    const double at = t.at("completed_at").get<double>();
    if (node == w1) {
      ++by_w1;
      w1_last = std::max(w1_last, at);
    }
    if (node == w2) {
      ++by_w2;
      w2_last = std::max(w2_last, at);
    }
  }
  EXPECT_EQ(seen.size(), 3 * tasks);
  for (const auto& a : j.at("apps")) {
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u);
    EXPECT_EQ(a.at("completed").get<std::uint64_t>(), a.at("tasks").get<std::uint64_t>());
  }
  EXPECT_TRUE(j.at("ok").get<bool>());
  EXPECT_GT(by_w1, 0u);
  EXPECT_GT(by_w2, 0u);
  EXPECT_GT(w2_last, w1_last) << "the orphan did no work after its parent died";
  EXPECT_TRUE(processes_mentioning(tag).empty());
}

}  // namespace

TEST(TreeRepair, AnOrphanRejoinsTheMasterWhenItsParentIsKilled) { kill_the_inner_worker(false); }

TEST(TreeRepair, AnOrphanRejoinsTheMasterUnderCurve) { kill_the_inner_worker(true); }
