// Failure, rejoin, authentication and hostile input, with real processes on loopback
// (docs/fault-tolerance.md, docs/security.md).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <set>
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {


/// master (no cores) with `workers` worker names; matmul tasks long enough to last a while.
std::string experiment(const std::vector<std::pair<std::string, std::string>>& workers, std::uint64_t tasks,
                       std::uint32_t n = 160) {
  std::string t = "[[node]]\nname = \"m\"\ncores = 0\n";
  for (const auto& [name, parent] : workers)
    t += "[[node]]\nname = \"" + name + "\"\nparent = \"" + parent + "\"\ncores = 1\n";
  t += "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = " + std::to_string(n) + "\ntasks = " + std::to_string(tasks) +
       "\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 4096\nweight = 2\ntasks = " + std::to_string(2 * tasks) +
       "\n[run]\nbuffer = 4\n";
  return t;
}

/// Checks results.json: every task exactly once, none wrong.
void expect_exactly_once(const fs::path& results, std::uint64_t total) {
  const auto j = nlohmann::json::parse(read_file(results));
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (const auto& t : j.at("tasks"))
    EXPECT_TRUE(seen.insert({t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()}).second);
  EXPECT_EQ(seen.size(), total);
  for (const auto& a : j.at("apps")) {
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u);
    EXPECT_EQ(a.at("completed").get<std::uint64_t>(), a.at("tasks").get<std::uint64_t>());
  }
  EXPECT_TRUE(j.at("ok").get<bool>());
}

std::uint64_t computed_by(const fs::path& results, const std::string& node) {
  const auto j = nlohmann::json::parse(read_file(results));
  std::uint64_t n = 0;
  for (const auto& t : j.at("tasks"))
    if (t.at("node") == node) ++n;
  return n;
}


}  // namespace

TEST(FaultTest, KillNineOfALeafAndOfAnInnerWorkerLosesNoTask) {
  TempDir dir;
  const std::string p = "kill" + std::to_string(getpid());
  const std::uint64_t tasks = 3000;
  const auto exp = write_file(dir.path() / "kill.toml",
                              experiment({{p + "in", "m"}, {p + "leafa", p + "in"}, {p + "leafb", "m"}, {p + "other", "m"}}, tasks, 384));
  Child run({treefarm_bin, "run", exp, "--out", (dir.path() / "out").string(), "--heartbeat-timeout", "2",
             "--heartbeat-interval", "0.3"},
            dir.path() / "run.log");
  ASSERT_TRUE(wait_until([&] { return progress_done(run.output()) > 3 * tasks / 10; }, 120)) << run.output();
  auto leaf = processes_mentioning("--name " + p + "leafb ");
  ASSERT_EQ(leaf.size(), 1u);
  kill(leaf[0], SIGKILL);
  ASSERT_TRUE(wait_until([&] { return progress_done(run.output()) > 5 * tasks / 10; }, 120)) << run.output();
  auto inner = processes_mentioning("--name " + p + "in ");
  ASSERT_EQ(inner.size(), 1u);
  kill(inner[0], SIGKILL);
  const auto rc = run.wait(240);
  ASSERT_TRUE(rc.has_value()) << run.output();
  EXPECT_EQ(*rc, 0) << run.output();
  expect_exactly_once(dir.path() / "out" / "results.json", 3 * tasks);
  EXPECT_GT(computed_by(dir.path() / "out" / "results.json", p + "other"), 0u);
  EXPECT_TRUE(processes_mentioning(p).empty());
}

TEST(FaultTest, AWorkerStartedMidRunJoinsAndComputes) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "join.toml", experiment({{"w1", "m"}}, 1500, 384));
  Child master({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                "--wait-workers", "1"},
               dir.path() / "master.log");
  const auto ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(ep.empty()) << master.output();
  Child w1({worker_bin, "--parent", ep, "--name", "w1", "--cores", "1"}, dir.path() / "w1.log");
  ASSERT_TRUE(wait_until([&] { return progress_done(master.output()) > 150; }, 60)) << master.output();
  Child late({worker_bin, "--parent", ep, "--name", "late", "--cores", "1"}, dir.path() / "late.log");
  const auto rc = master.wait(180);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output();
  expect_exactly_once(dir.path() / "out" / "results.json", 4500);
  EXPECT_GT(computed_by(dir.path() / "out" / "results.json", "late"), 0u) << late.output();
}

TEST(FaultTest, PeersWithoutAKeyOrWithAWrongKeyAreRefusedWhileTheRunCompletes) {
  TempDir dir;
  const auto keys = (dir.path() / "keys").string();
  ASSERT_EQ(run_command(treefarm_bin + " keygen m w1 --out " + keys).exit_code, 0);
  ASSERT_EQ(run_command(treefarm_bin + " keygen rogue --out " + (dir.path() / "rogue").string()).exit_code, 0);
  const auto exp = write_file(dir.path() / "curve.toml", experiment({{"w1", "m"}}, 600, 128));
  Child master({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                "--wait-workers", "1", "--curve-secret", keys + "/m.key_secret", "--authorized-keys",
                keys + "/authorized_keys"},
               dir.path() / "master.log");
  const auto ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(ep.empty()) << master.output();
  // Before the legitimate worker: a peer without a key, and one whose key is not listed.
  Child nokey({worker_bin, "--parent", ep, "--name", "nokey", "--join-timeout", "3", "--rejoin-timeout", "0"},
              dir.path() / "nokey.log");
  Child wrong({worker_bin, "--parent", ep, "--name", "wrong", "--join-timeout", "3", "--rejoin-timeout", "0",
               "--curve-secret", (dir.path() / "rogue" / "rogue.key_secret").string(), "--parent-key", keys + "/m.key"},
              dir.path() / "wrong.log");
  Child w1({worker_bin, "--parent", ep, "--name", "w1", "--cores", "1", "--curve-secret", keys + "/w1.key_secret",
            "--parent-key", keys + "/m.key"},
           dir.path() / "w1.log");
  const auto rc = master.wait(120);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output();
  expect_exactly_once(dir.path() / "out" / "results.json", 1800);
  EXPECT_EQ(computed_by(dir.path() / "out" / "results.json", "nokey"), 0u);
  EXPECT_EQ(computed_by(dir.path() / "out" / "results.json", "wrong"), 0u);
  EXPECT_NE(master.output().find("refused a connection"), std::string::npos) << master.output();
  EXPECT_NE(nokey.wait(30).value_or(0), 0);  // never welcomed
  EXPECT_NE(wrong.wait(30).value_or(0), 0);
  // No secret in any log or result.
  const auto secret = read_file(keys + "/m.key_secret");
  const auto at = secret.find("secret-key = \"") + 14;
  const auto secret_key = secret.substr(at, 40);
  for (const auto& text : {master.output(), w1.output(), read_file(dir.path() / "out" / "results.json")})
    EXPECT_EQ(text.find(secret_key), std::string::npos);
}

namespace {
/// Sends hostile bytes to a ROUTER endpoint: raw TCP garbage, a ZMTP peer with a bad
/// header, a truncated header, an oversized length, a Task with no payload.
void attack(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  const int port = std::stoi(endpoint.substr(colon + 1));
  // 1. Raw garbage on TCP (not even ZMTP).
  {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      std::string junk(4096, '\xff');
      (void)!write(fd, junk.data(), junk.size());
    }
    close(fd);
  }
  // 2. ZMTP peers sending malformed treefarm messages.
  zmq::context_t ctx(1);
  const std::vector<std::vector<std::string>> bad = {
      {"garbage"},
      {std::string("TFRM\x01\x00\x01", 7)},                                   // truncated header
      {std::string("TFRM\x01\x00\x03\x00\xff\xff\xff\x7f\x00\x00\x00\x00", 16)},  // oversized body length
      {std::string("\x54\x46\x52\x4d\x01\x00\x04\x00\x08\x00\x00\x00\x00\x00\x00\x00", 16) + std::string(8, '\0')},  // Task, no payload
  };
  int i = 0;
  for (const auto& frames : bad) {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 500);
    s.set(zmq::sockopt::routing_id, "attacker" + std::to_string(i++));
    s.connect(endpoint);
    for (std::size_t f = 0; f < frames.size(); ++f)
      s.send(zmq::buffer(frames[f]), f + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}
}  // namespace

TEST(FaultTest, GarbageSentToAMasterAndToAWorkerDropsThePeerAndTheRunCompletes) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "hostile.toml", experiment({{"w1", "m"}, {"w2", "w1"}}, 1500, 384));
  Child master({master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out", (dir.path() / "out").string(),
                "--wait-workers", "2"},
               dir.path() / "master.log");
  const auto ep = wait_for_line(dir.path() / "m.ep");
  ASSERT_FALSE(ep.empty());
  Child w1({worker_bin, "--parent", ep, "--name", "w1", "--cores", "1", "--ready-file", (dir.path() / "w1.ep").string()},
           dir.path() / "w1.log");
  const auto ep1 = wait_for_line(dir.path() / "w1.ep");
  ASSERT_FALSE(ep1.empty()) << w1.output();
  Child w2({worker_bin, "--parent", ep1, "--name", "w2", "--cores", "1"}, dir.path() / "w2.log");
  ASSERT_TRUE(wait_until([&] { return progress_done(master.output()) > 100; }, 60)) << master.output();
  attack(ep);
  attack(ep1);
  const auto rc = master.wait(180);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, 0) << master.output();
  expect_exactly_once(dir.path() / "out" / "results.json", 4500);
  EXPECT_NE(master.output().find("dropping"), std::string::npos) << master.output();
  EXPECT_NE(w1.output().find("dropping"), std::string::npos) << w1.output();
  EXPECT_GT(computed_by(dir.path() / "out" / "results.json", "w2"), 0u);
}
