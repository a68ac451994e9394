// The a-posteriori prediction of a tree that shares this machine and the a-priori
// prediction's interval (docs/live-model.md), through real processes on loopback: a run
// given a calibration (written here: one shared 2-CPU host, a busy share of 0.9, 50 ms tasks) keeps in
// results.json the CPU figures the nodes reported on their heartbeats and the machine's
// idle time, the a-posteriori optimum made from them, and the interval with where the
// measurement fell. Presence and consistency only: no speed is asserted.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

namespace fs = std::filesystem;
using namespace treefarm::testing;

namespace {

TEST(APosteriori, ALoopbackRunKeepsTheCpuFiguresItsModelWasMadeFrom) {
  TempDir dir;
  // 200 tasks of a 50 ms sleep on two one-core workers: about 5 s whatever the load, so
  // the heartbeats (every second) cover the steady window.
  const auto exp = write_file(dir.path() / "ap.toml",
                              "[[node]]\nname = \"pm\"\ncores = 0\n"
                              "[[node]]\nname = \"pa\"\nparent = \"pm\"\ncores = 1\n"
                              "[[node]]\nname = \"pb\"\nparent = \"pm\"\ncores = 1\n"
                              "[[app]]\nname = \"nap\"\nkind = \"command\"\nargv = [\"sleep\", \"0.05\"]\n"
                              "bytes = \"1KiB\"\ntasks = 200\n"
                              "[run]\nbuffer = 2\npolicy = \"lp\"\ncomm_model = \"multi-port\"\n");
  // One host of 2 CPUs; the links' probe rounds and the CPU per byte have a spread, so
  // the prediction has an interval.
  const std::string link = "\"link_bandwidth\": 1e9, \"link_bandwidth_min\": 5e8, \"link_bandwidth_max\": 2e9";
  const auto cal = write_file(
      dir.path() / "cal.json",
      "{\"format\": \"treefarm-calibration\", \"version\": 1, \"experiment\": \"" + exp + "\", \"measured_at\": 0,\n"
      " \"hosts\": [{\"name\": \"here\", \"cores\": 2.0, \"comm_cpu_seconds_per_byte\": 1e-9, \"comm_cpu_spread\": 0.2,"
      " \"busy_share\": 0.9}],\n"
      " \"nodes\": [{\"name\": \"pm\", \"cores\": 0, \"host\": \"here\", \"task_seconds\": {}},\n"
      "  {\"name\": \"pa\", \"parent\": \"pm\", \"cores\": 1, \"host\": \"here\", \"cpu_share\": 1.0, " + link +
          ", \"task_seconds\": {\"nap\": 0.05}},\n"
      "  {\"name\": \"pb\", \"parent\": \"pm\", \"cores\": 1, \"host\": \"here\", \"cpu_share\": 1.0, " + link +
          ", \"task_seconds\": {\"nap\": 0.05}}]}\n");
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --calibration " + cal + " --out " + out.string() +
                             " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto res = nlohmann::json::parse(read_file(out / "results.json"));
  const double predicted = res.at("predicted_fair_throughput").get<double>();
  ASSERT_GT(predicted, 0.0);

  // The interval: around the prediction, logged at the start, in the table, in results.json.
  ASSERT_TRUE(res.contains("fair_throughput_interval")) << res.dump().substr(0, 600);
  const double low = res["fair_throughput_interval"]["low"].get<double>();
  const double high = res["fair_throughput_interval"]["high"].get<double>();
  EXPECT_LE(low, predicted);
  EXPECT_GE(high, predicted);
  EXPECT_LT(low, high) << "the links' probe rounds spread from 0.5 to 2 GB/s";
  const double fair = res.at("fair_throughput").get<double>();
  EXPECT_EQ(res.at("fair_inside_interval").get<bool>(), fair >= low && fair <= high);
  EXPECT_NE(r.output.find("master: LP optimum fair throughput"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("prediction interval (the calibration's spread)"), std::string::npos) << r.output;

  // The a-posteriori model: every node of the shared host reported its CPU; the tree's is
  // their sum; the machine gave the tree at most its 2 CPUs; the optimum is made from them.
  ASSERT_TRUE(res.contains("a_posteriori")) << r.output;
  const auto& ap = res["a_posteriori"];
  std::set<std::string> nodes;
  double sum = 0;
  for (const auto& [name, seconds] : ap.at("node_cpu_seconds").items()) {
    nodes.insert(name);
    EXPECT_GE(seconds.get<double>(), 0.0) << name;
    sum += seconds.get<double>();
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"pm", "pa", "pb"}));
  EXPECT_GT(sum, 0.0);
  EXPECT_NEAR(ap.at("tree_cpu_seconds").get<double>(), sum, 1e-9);
  const double window = ap["window"][1].get<double>() - ap["window"][0].get<double>();
  EXPECT_NEAR(window, (1 - 2 * res.at("epsilon").get<double>()) * res.at("steady_end").get<double>(), 1e-6);
  const double cores = ap.at("available_cores").get<double>();
  EXPECT_GT(cores, 0.0);
  EXPECT_LE(cores, 2.0);
  // The idle time plus the tree's own (less where a cgroup quota is lower), at the share
  // of it a saturated tree uses (the calibration's busy_share).
  EXPECT_DOUBLE_EQ(ap.at("busy_share").get<double>(), 0.9);
  EXPECT_LE(cores, 0.9 * std::min(2.0, (ap.at("idle_cpu_seconds").get<double>() + sum) / window) + 1e-6);
  EXPECT_TRUE(ap.at("kernel_factor").contains("pa") || ap.at("kernel_factor").contains("pb"));
  ASSERT_TRUE(res.contains("fair_predicted_a_posteriori"));
  const double post = res["fair_predicted_a_posteriori"].get<double>();
  EXPECT_GT(post, 0.0);
  EXPECT_NEAR(res.at("fair_ratio_a_posteriori").get<double>(), fair / post, 1e-9);
  EXPECT_NE(r.output.find("a posteriori (LP over the rates this run observed)"), std::string::npos) << r.output;
}

}  // namespace
