// `treefarm-worker --join ANY-NODE --parent auto` (docs/planning.md) with real processes on
// loopback: the joiner learns the live tree from a leaf, probes every node's link, chooses
// a parent, joins it, and the run completes with every task recorded exactly once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/support/EveryTaskOnce.hpp"

using namespace treefarm::testing;

TEST(AutoParentTest, AWorkerWithParentAutoJoinsAThreeNodeTreeAndTheRunCompletesExactlyOnce) {
  TempDir dir;
  const std::uint64_t tasks = 400;
  ChainTree tree;
  const auto problem = tree.start(dir.path(), tasks, 160);
  ASSERT_TRUE(problem.empty()) << problem;
  auto& master = *tree.master;
  const std::string w2_ep = tree.w2_endpoint;
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
  const std::string parent_log = tree.output_of(chosen);
  EXPECT_NE(parent_log.find("child 'auto1' joined"), std::string::npos) << parent_log;
  // Every task exactly once, the joiner computed some.
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  const auto per_node = treefarm::test_support::every_task_once(j, tasks);
  EXPECT_TRUE(j.at("ok").get<bool>());
  EXPECT_GT(per_node.count("auto1") ? per_node.at("auto1") : 0, 0u);
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
  ChainTree tree;
  const auto problem = tree.start(dir.path(), tasks, 160, [&](const std::string& name) {
    std::vector<std::string> args{"--curve-secret", key(name + ".key_secret"), "--authorized-keys", key("authorized_keys")};
    if (name != "m") {
      args.push_back("--parent-key");
      args.push_back(key(name == "w1" ? "m.key" : "w1.key"));
    }
    return args;
  });
  ASSERT_TRUE(problem.empty()) << problem;
  auto& master = *tree.master;
  const std::string w2_ep = tree.w2_endpoint;
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
  const std::string parent_log = tree.output_of(chosen);
  EXPECT_NE(parent_log.find("child 'auto1' joined"), std::string::npos) << chosen << "\n" << parent_log;
  const auto j = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  const auto per_node = treefarm::test_support::every_task_once(j, tasks);
  EXPECT_GT(per_node.count("auto1") ? per_node.at("auto1") : 0, 0u);
  EXPECT_EQ(per_node.count("plain"), 0u);
  EXPECT_EQ(joiner.wait(30).value_or(-1), 0) << log;
  const auto plain_rc = plain.wait(30);
  ASSERT_TRUE(plain_rc.has_value());
  EXPECT_NE(*plain_rc, 0) << plain.output();
  EXPECT_NE(plain.output().find("no treefarm node answered"), std::string::npos) << plain.output();
}
