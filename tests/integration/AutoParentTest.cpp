// `treefarm-worker --join ANY-NODE --parent auto` (docs/planning.md) with real processes on
// loopback: the joiner learns the live tree from a leaf, probes every node's link, chooses
// a parent, joins it, and the run completes with every task recorded exactly once.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {


}  // namespace

TEST(AutoParentTest, AWorkerWithParentAutoJoinsAThreeNodeTreeAndTheRunCompletesExactlyOnce) {
  TempDir dir;
  const std::uint64_t tasks = 400;
  const auto exp = write_file(dir.path() / "auto.toml",
                              "[[node]]\nname = \"m\"\ncores = 0\n"
                              "[[node]]\nname = \"w1\"\nparent = \"m\"\ncores = 1\n"
                              "[[node]]\nname = \"w2\"\nparent = \"w1\"\ncores = 1\n"
                              "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 160\ntasks = " + std::to_string(tasks) +
                              "\n[run]\nbuffer = 4\n");
  Child master({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                "--wait-workers", "3", "--wait-timeout", "60"},
               dir.path() / "master.log");
  const auto m_ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(m_ep.empty()) << master.output();
  Child w1({worker_bin, "--parent", m_ep, "--name", "w1", "--cores", "1", "--ready-file", (dir.path() / "w1.ep").string()},
           dir.path() / "w1.log");
  const auto w1_ep = wait_for_line(dir.path() / "w1.ep");
  ASSERT_FALSE(w1_ep.empty()) << w1.output();
  Child w2({worker_bin, "--parent", w1_ep, "--name", "w2", "--cores", "1", "--ready-file", (dir.path() / "w2.ep").string()},
           dir.path() / "w2.log");
  const auto w2_ep = wait_for_line(dir.path() / "w2.ep");
  ASSERT_FALSE(w2_ep.empty()) << w2.output();
  // w2 has joined w1 and advertised its endpoint once w1 logs it as a child.
  ASSERT_TRUE(wait_until([&] { return w1.output().find("child 'w2' joined") != std::string::npos; }, 30)) << w1.output();
  // Enter the tree at its deepest node: the joiner must walk up to find m and w1.
  Child joiner({worker_bin, "--join", w2_ep, "--parent", "auto", "--name", "auto1", "--cores", "1", "--probe-bytes",
                "1048576"},
               dir.path() / "auto.log");
  const auto rc = master.wait(240);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output() << joiner.output();
  const std::string log = joiner.output();
  // It measured every node and chose one of them.
  for (const char* n : {"m (", "w1 (", "w2 ("}) EXPECT_NE(log.find(std::string("--parent auto: ") + n), std::string::npos) << log;
  const auto at = log.find("--parent auto chose ");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string chosen = log.substr(at + 20, log.find(' ', at + 20) - at - 20);
  ASSERT_TRUE(chosen == "m" || chosen == "w1" || chosen == "w2") << chosen;
  EXPECT_NE(log.find("among 3 nodes"), std::string::npos) << log;
  // ... and joined it: the chosen node admitted it.
  const std::string parent_log = chosen == "m" ? master.output() : chosen == "w1" ? w1.output() : w2.output();
  EXPECT_NE(parent_log.find("child 'auto1' joined"), std::string::npos) << parent_log;
  // Every task exactly once, the joiner computed some.
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  std::set<std::uint64_t> seen;
  std::uint64_t by_joiner = 0;
  for (const auto& t : j.at("tasks")) {
    EXPECT_TRUE(seen.insert(t.at("id").get<std::uint64_t>()).second);
    if (t.at("node") == "auto1") ++by_joiner;
  }
  EXPECT_EQ(seen.size(), tasks);
  EXPECT_TRUE(j.at("ok").get<bool>());
  EXPECT_GT(by_joiner, 0u);
  EXPECT_EQ(joiner.wait(30).value_or(-1), 0) << log;
}

// Under CURVE: the joiner knows only the --join node's key (--parent-key); the others'
// come with the TreeInfo answers, every question is encrypted and authenticated (the
// joiner's key is in each node's authorized_keys), and it joins the chosen parent with
// that parent's key. An unencrypted question to the same tree gets no answer.
TEST(AutoParentTest, UnderCurveTheJoinerLearnsTheKeysAndJoinsExactlyOnce) {
  TempDir dir;
  const std::string keys = (dir.path() / "keys").string();
  ASSERT_EQ(run_command(treefarm_bin + " keygen m w1 w2 auto1 --out " + keys).exit_code, 0);
  const auto key = [&](const std::string& f) { return keys + "/" + f; };
  const std::uint64_t tasks = 300;
  const auto exp = write_file(dir.path() / "auto.toml",
                              "[[node]]\nname = \"m\"\ncores = 0\n"
                              "[[node]]\nname = \"w1\"\nparent = \"m\"\ncores = 1\n"
                              "[[node]]\nname = \"w2\"\nparent = \"w1\"\ncores = 1\n"
                              "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 160\ntasks = " + std::to_string(tasks) +
                              "\n[run]\nbuffer = 4\n");
  Child master({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                "--wait-workers", "3", "--wait-timeout", "60", "--curve-secret", key("m.key_secret"), "--authorized-keys",
                key("authorized_keys")},
               dir.path() / "master.log");
  const auto m_ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(m_ep.empty()) << master.output();
  Child w1({worker_bin, "--parent", m_ep, "--name", "w1", "--cores", "1", "--ready-file", (dir.path() / "w1.ep").string(),
            "--curve-secret", key("w1.key_secret"), "--parent-key", key("m.key"), "--authorized-keys", key("authorized_keys")},
           dir.path() / "w1.log");
  const auto w1_ep = wait_for_line(dir.path() / "w1.ep");
  ASSERT_FALSE(w1_ep.empty()) << w1.output();
  Child w2({worker_bin, "--parent", w1_ep, "--name", "w2", "--cores", "1", "--ready-file", (dir.path() / "w2.ep").string(),
            "--curve-secret", key("w2.key_secret"), "--parent-key", key("w1.key"), "--authorized-keys", key("authorized_keys")},
           dir.path() / "w2.log");
  const auto w2_ep = wait_for_line(dir.path() / "w2.ep");
  ASSERT_FALSE(w2_ep.empty()) << w2.output();
  ASSERT_TRUE(wait_until([&] { return w1.output().find("child 'w2' joined") != std::string::npos; }, 30)) << w1.output();
  // Without keys the tree does not answer (CURVE refuses the handshake).
  Child plain({worker_bin, "--join", w2_ep, "--parent", "auto", "--name", "plain", "--cores", "1", "--probe-bytes", "65536"},
              dir.path() / "plain.log");
  Child joiner({worker_bin, "--join", w2_ep, "--parent", "auto", "--name", "auto1", "--cores", "1", "--probe-bytes",
                "1048576", "--curve-secret", key("auto1.key_secret"), "--parent-key", key("w2.key"), "--listen", ""},
               dir.path() / "auto.log");
  const auto rc = master.wait(240);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output() << joiner.output();
  const std::string log = joiner.output();
  for (const char* n : {"m (", "w1 (", "w2 ("}) EXPECT_NE(log.find(std::string("--parent auto: ") + n), std::string::npos) << log;
  const auto at = log.find("--parent auto chose ");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string chosen = log.substr(at + 20, log.find(' ', at + 20) - at - 20);
  const std::string parent_log = chosen == "m" ? master.output() : chosen == "w1" ? w1.output() : w2.output();
  EXPECT_NE(parent_log.find("child 'auto1' joined"), std::string::npos) << chosen << "\n" << parent_log;
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  std::set<std::uint64_t> seen;
  std::uint64_t by_joiner = 0;
  for (const auto& t : j.at("tasks")) {
    EXPECT_TRUE(seen.insert(t.at("id").get<std::uint64_t>()).second);
    if (t.at("node") == "auto1") ++by_joiner;
    EXPECT_NE(t.at("node"), "plain");
  }
  EXPECT_EQ(seen.size(), tasks);
  EXPECT_GT(by_joiner, 0u);
  EXPECT_EQ(joiner.wait(30).value_or(-1), 0) << log;
  const auto plain_rc = plain.wait(30);
  ASSERT_TRUE(plain_rc.has_value());
  EXPECT_NE(*plain_rc, 0) << plain.output();
  EXPECT_NE(plain.output().find("no treefarm node answered"), std::string::npos) << plain.output();
}
