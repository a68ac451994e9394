// Names bound to CURVE keys (docs/security.md), with real processes: an
// authorized key may join only under the name its authorized_keys line gives it, and a
// second connection cannot take over a live node's name.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {

}  // namespace

TEST(FaultTest, NameTakeoverWithAnotherAuthorizedKeyIsRefused) {
  TempDir dir;
  const auto keys = (dir.path() / "keys").string();
  ASSERT_EQ(run_command(treefarm_bin + " keygen m w1 evil --out " + keys).exit_code, 0);
  const auto authorized = read_file(keys + "/authorized_keys");
  ASSERT_EQ(authorized.rfind("m ", 0), 0u) << "keygen no longer writes `NAME PUBKEY`:\n" << authorized;
  const std::uint64_t tasks = 1200;
  const auto exp = write_file(dir.path() / "names.toml",
                              "[[node]]\nname = \"m\"\ncores = 0\n[[node]]\nname = \"w1\"\nparent = \"m\"\ncores = 1\n"
                              "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 192\ntasks = " + std::to_string(tasks) +
                                  "\n[run]\nbuffer = 4\n");
  Child master({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                "--wait-workers", "1", "--curve-secret", keys + "/m.key_secret", "--authorized-keys",
                keys + "/authorized_keys"},
               dir.path() / "master.log");
  const auto ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(ep.empty()) << master.output();
  auto impostor = [&](const std::string& log) {
    return std::make_unique<Child>(std::vector<std::string>{worker_bin, "--parent", ep, "--name", "w1", "--cores", "1",
                                                            "--listen", "", "--join-timeout", "3", "--rejoin-timeout", "0",
                                                            "--curve-secret", keys + "/evil.key_secret", "--parent-key",
                                                            keys + "/m.key"},
                                   dir.path() / log);
  };
  // A holder of evil's (authorized) key says Hello as "w1": refused and logged.
  auto first = impostor("impostor1.log");
  EXPECT_NE(first->wait(30).value_or(0), 0) << "the impostor was welcomed\n" << first->output();
  EXPECT_NE(master.output().find("refused a Hello as 'w1' from public key"), std::string::npos) << master.output();
  EXPECT_NE(master.output().find("bound to 'evil'"), std::string::npos) << master.output();
  // The real w1 joins and computes; meanwhile a second impostor tries to take over its name.
  Child w1({worker_bin, "--parent", ep, "--name", "w1", "--cores", "1", "--listen", "", "--curve-secret",
            keys + "/w1.key_secret", "--parent-key", keys + "/m.key"},
           dir.path() / "w1.log");
  ASSERT_TRUE(wait_until([&] { return progress_done(master.output()) > 10; }, 120)) << master.output();
  auto second = impostor("impostor2.log");
  EXPECT_NE(second->wait(30).value_or(0), 0) << "the takeover was welcomed\n" << second->output();
  const auto rc = master.wait(150);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output();
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  std::set<std::uint64_t> seen;
  for (const auto& t : j.at("tasks")) {
    EXPECT_TRUE(seen.insert(t.at("id").get<std::uint64_t>()).second);
    EXPECT_EQ(t.at("node").get<std::string>(), "w1");
  }
  EXPECT_EQ(seen.size(), tasks);
  EXPECT_EQ(master.output().find("child 'w1' joined", master.output().find("child 'w1' joined") + 1), std::string::npos)
      << "w1 joined twice: its connection was taken over\n" << master.output();
  EXPECT_TRUE(w1.wait(30).has_value());
}
