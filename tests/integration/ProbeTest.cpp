// `treefarm probe` (docs/machines-file.md) on three real workers on loopback: each worker
// measures the links from the others to itself on request (ProbeRequest/ProbeReport), the
// file written parses as MACHINES.toml with every pair measured, positive bandwidths and
// latencies, and a measured speed per machine. Under CURVE: with the prober's and the
// workers' keys authorized it works; a worker whose key the target does not admit reports
// a clear refusal.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/plan/MachineSet.hpp"
#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {

/// A master waiting for more workers than will come (so the tree stays up, idle) and
/// three workers under it; ends every process it started.
struct IdleTree {
  TempDir dir;
  std::unique_ptr<Child> master;
  std::vector<std::unique_ptr<Child>> workers;
  std::vector<std::string> endpoints;
  std::string master_endpoint;

  /// `master_extra` / `worker_extra(i)`: extra arguments (CURVE keys) or none.
  void start(const std::vector<std::string>& master_extra, const std::function<std::vector<std::string>(int)>& worker_extra) {
    const auto exp = write_file(dir.path() / "idle.toml",
                                "[[node]]\nname = \"m\"\ncores = 0\n"
                                "[[node]]\nname = \"w1\"\nparent = \"m\"\ncores = 1\n"
                                "[[node]]\nname = \"w2\"\nparent = \"m\"\ncores = 1\n"
                                "[[node]]\nname = \"w3\"\nparent = \"m\"\ncores = 1\n"
                                "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\ntasks = 10\n");
    std::vector<std::string> margv{master_bin, exp, "--ready-file", (dir.path() / "m.ep").string(), "--out",
                                   (dir.path() / "out").string(), "--wait-workers", "9", "--wait-timeout", "120"};
    margv.insert(margv.end(), master_extra.begin(), master_extra.end());
    master = std::make_unique<Child>(margv, dir.path() / "master.log");
    const auto m_ep = wait_for_line(dir.path() / "m.ep");
    ASSERT_FALSE(m_ep.empty()) << master->output();
    master_endpoint = m_ep;
    for (int i = 1; i <= 3; ++i) {
      const std::string name = "w" + std::to_string(i);
      std::vector<std::string> argv{worker_bin, "--parent", m_ep, "--name", name, "--cores", "1", "--ready-file",
                                    (dir.path() / (name + ".ep")).string()};
      const auto extra = worker_extra(i);
      argv.insert(argv.end(), extra.begin(), extra.end());
      workers.push_back(std::make_unique<Child>(argv, dir.path() / (name + ".log")));
      endpoints.push_back(wait_for_line(dir.path() / (name + ".ep")));
      ASSERT_FALSE(endpoints.back().empty()) << workers.back()->output();
    }
  }

  /// Under CURVE with the keys `treefarm keygen` wrote in `keys`: the master admits
  /// authorized_keys, worker i the file named `authorized(i)`.
  void start_curve(const std::filesystem::path& keys, const std::function<std::string(int)>& authorized) {
    const auto key = [&](const std::string& f) { return (keys / f).string(); };
    start({"--curve-secret", key("m.key_secret"), "--authorized-keys", key("authorized_keys")}, [&](int i) {
      const std::string n = "w" + std::to_string(i);
      return std::vector<std::string>{"--curve-secret", key(n + ".key_secret"), "--parent-key", key("m.key"),
                                      "--authorized-keys", key(authorized(i))};
    });
  }
};

}  // namespace

TEST(ProbeTest, ThreeWorkersGiveAMachinesFileWithEveryPairMeasured) {
  IdleTree tree;
  ASSERT_NO_FATAL_FAILURE(tree.start({}, [](int) { return std::vector<std::string>{}; }));
  const auto out = tree.dir.path() / "machines.toml";
  const auto r = run_command(treefarm_bin + " probe --workers " + tree.endpoints[0] + "," + tree.endpoints[1] + "," +
                             tree.endpoints[2] + " --bytes 1048576 --rounds 2 --out " + out.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto set = treefarm::plan::load_machines(out.string());
  ASSERT_EQ(set.machines.size(), 3u);
  for (const char* n : {"w1", "w2", "w3"}) {
    const auto i = set.machine_index(n);
    ASSERT_TRUE(i.has_value()) << n;
    EXPECT_EQ(set.machines[*i].cores, 1u);
    // A real matmul on one core: between 10 Mflop/s and 1 Tflop/s.
    EXPECT_GT(set.machines[*i].speed, 1e7) << n;
    EXPECT_LT(set.machines[*i].speed, 1e12) << n;
  }
  ASSERT_EQ(set.pair_bandwidth.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      if (i == j) continue;
      EXPECT_GT(set.pair_bandwidth[i][j], 0) << i << "," << j;
      EXPECT_GT(set.pair_latency[i][j], 0) << i << "," << j;
      EXPECT_LT(set.pair_latency[i][j], 1.0) << i << "," << j;  // loopback: well under a second
    }
  // Both directions of every pair, each measured by the receiving worker.
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j.at("links").size(), 6u);
  for (const auto& l : j.at("links")) EXPECT_GT(l.at("bandwidth").get<double>(), 0) << l.dump();
}

TEST(ProbeTest, UnderCurveTheWorkersAuthenticateAndAnUnadmittedOneIsRefusedClearly) {
  IdleTree tree;
  const auto keys = tree.dir.path() / "keys";
  auto k = run_command(treefarm_bin + " keygen m w1 w2 w3 prober --out " + keys.string());
  ASSERT_EQ(k.exit_code, 0) << k.output;
  // w3's key is not admitted by the others: only m, w1, w2 and the prober are.
  {
    std::string text, line;
    std::istringstream in(read_file(keys / "authorized_keys"));
    while (std::getline(in, line))
      if (line.rfind("w3 ", 0) != 0) text += line + "\n";
    write_file(keys / "partial_keys", text);
  }
  const auto key = [&](const std::string& f) { return (keys / f).string(); };
  ASSERT_NO_FATAL_FAILURE(
      tree.start_curve(keys, [](int i) { return std::string(i == 3 ? "authorized_keys" : "partial_keys"); }));
  // w1 and w2: each admits the other.
  const auto out = tree.dir.path() / "machines.toml";
  const std::string base = treefarm_bin + " probe --curve-secret " + key("prober.key_secret") + " --keys " + keys.string() +
                           " --bytes 65536 --rounds 2 --timeout 2 --no-speed";
  auto r = run_command(base + " --workers w1=" + tree.endpoints[0] + ",w2=" + tree.endpoints[1] + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto set = treefarm::plan::load_machines(out.string());
  ASSERT_EQ(set.machines.size(), 2u);
  EXPECT_GT(set.pair_bandwidth[0][1], 0);
  // w3 -> w1: w1 refuses w3's key at the handshake, so w3 cannot measure the link from w1.
  r = run_command(base + " --workers w1=" + tree.endpoints[0] + ",w3=" + tree.endpoints[2]);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("w3 could not measure the link from w1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("authorized_keys"), std::string::npos) << r.output;
}

// Under CURVE the --tree form works as the --workers form does: only the entry node is named
// (its key NAME.key from --keys), the others' keys come with the tree's answers. And the
// master answers a speed probe as a worker does.
TEST(ProbeTest, UnderCurveTheTreeFormLearnsTheKeysAndTheMasterAnswersASpeedProbe) {
  IdleTree tree;
  const auto keys = tree.dir.path() / "keys";
  auto k = run_command(treefarm_bin + " keygen m w1 w2 w3 prober --out " + keys.string());
  ASSERT_EQ(k.exit_code, 0) << k.output;
  const auto key = [&](const std::string& f) { return (keys / f).string(); };
  ASSERT_NO_FATAL_FAILURE(tree.start_curve(keys, [](int) { return std::string("authorized_keys"); }));
  const std::string base = treefarm_bin + " probe --curve-secret " + key("prober.key_secret") + " --keys " + keys.string() +
                           " --bytes 65536 --rounds 2 --timeout 2";
  const auto out = tree.dir.path() / "machines.toml";
  // Entering at w2: m (no cores: not probed), w1 and w3 are found through it.
  auto r = run_command(base + " --no-speed --tree w2=" + tree.endpoints[1] + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto set = treefarm::plan::load_machines(out.string());
  ASSERT_EQ(set.machines.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      if (i != j) {
        EXPECT_GT(set.pair_bandwidth[i][j], 0) << i << "," << j;
      }
  // Unnamed under CURVE: refused with the form to use.
  r = run_command(base + " --no-speed --tree " + tree.endpoints[1]);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("NAME=tcp://HOST:PORT"), std::string::npos) << r.output;
  // The master measures its own speed on request.
  r = run_command(base + " --workers m=" + tree.master_endpoint + ",w1=" + tree.endpoints[0] + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  bool saw_master = false;
  for (const auto& m : j.at("machines"))
    if (m.at("name") == "m") {
      saw_master = true;
      EXPECT_GT(m.at("speed").get<double>(), 1e7) << m.dump();
      EXPECT_LT(m.at("speed").get<double>(), 1e12) << m.dump();
    }
  EXPECT_TRUE(saw_master) << j.dump();
}
