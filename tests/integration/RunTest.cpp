// End-to-end runs of `treefarm run` with real processes on loopback.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {


// A tree deeper than the quickstart: master -> a -> b -> c (depth 3), plus siblings.
std::string deep_tree(const std::string& prefix, std::uint64_t noop_tasks = 300) {
  return "[[node]]\nname = \"" + prefix + "m\"\ncores = 0\n"
         "[[node]]\nname = \"" + prefix + "a\"\nparent = \"" + prefix + "m\"\ncores = 1\n"
         "[[node]]\nname = \"" + prefix + "b\"\nparent = \"" + prefix + "a\"\ncores = 1\n"
         "[[node]]\nname = \"" + prefix + "c\"\nparent = \"" + prefix + "b\"\ncores = 1\n"
         "[[node]]\nname = \"" + prefix + "d\"\nparent = \"" + prefix + "m\"\ncores = 1\n"
         "[[node]]\nname = \"" + prefix + "e\"\nparent = \"" + prefix + "a\"\ncores = 0\n"
         "[[node]]\nname = \"" + prefix + "f\"\nparent = \"" + prefix + "e\"\ncores = 1\n"
         "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\nweight = 1\ntasks = 200\n"
         "[[app]]\nname = \"ma\"\nkernel = \"matadd\"\nn = 128\nweight = 2\ntasks = 300\n"
         "[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 1000\nweight = 1\ntasks = " + std::to_string(noop_tasks) + "\n"
         "[run]\nbuffer = 4\n";
}

}  // namespace

TEST(RunTest, DeepTreeCompletesEveryTaskExactlyOnceWithRightResults) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "deep.toml", deep_tree("deep"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(out / "results.json");
  const auto j = nlohmann::json::parse(f);

  std::map<std::string, std::uint64_t> tasks_of{{"mm", 200}, {"ma", 300}, {"nop", 300}};
  ASSERT_EQ(j.at("apps").size(), 3u);
  for (const auto& a : j.at("apps")) {
    const auto name = a.at("name").get<std::string>();
    EXPECT_EQ(a.at("tasks").get<std::uint64_t>(), tasks_of.at(name));
    EXPECT_EQ(a.at("completed").get<std::uint64_t>(), tasks_of.at(name)) << name;
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u) << name;
    EXPECT_GT(a.at("throughput").get<double>(), 0.0) << name;
    EXPECT_TRUE(a.contains("kernel") && a.contains("weight"));
  }
  EXPECT_GT(j.at("fair_throughput").get<double>(), 0.0);

  // Every task exactly once.
  std::set<std::pair<std::string, std::uint64_t>> seen;
  std::map<std::string, std::uint64_t> per_node;
  for (const auto& t : j.at("tasks")) {
    const auto key = std::make_pair(t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>());
    EXPECT_TRUE(seen.insert(key).second) << "task recorded twice: " << key.first << " " << key.second;
    EXPECT_LT(key.second, tasks_of.at(key.first));
    EXPECT_GE(t.at("completed_at").get<double>(), 0.0);
    per_node[t.at("node").get<std::string>()]++;
  }
  EXPECT_EQ(seen.size(), 800u);

  // Every node of the tree joined, with its parent; computed counts add up.
  std::map<std::string, std::string> parent_of;
  std::uint64_t computed = 0;
  for (const auto& n : j.at("nodes")) {
    parent_of[n.at("name").get<std::string>()] = n.at("parent").is_null() ? "" : n.at("parent").get<std::string>();
    computed += n.at("tasks_computed").get<std::uint64_t>();
    EXPECT_EQ(n.at("tasks_computed").get<std::uint64_t>(), per_node[n.at("name").get<std::string>()]);
  }
  EXPECT_EQ(computed, 800u);
  EXPECT_EQ(parent_of.size(), 7u);
  EXPECT_EQ(parent_of["deepc"], "deepb");
  EXPECT_EQ(parent_of["deepf"], "deepe");
  EXPECT_EQ(parent_of["deepm"], "");
  // The depth-3 leaf and the leaf under a forward-only node computed something.
  EXPECT_GT(per_node["deepc"], 0u);
  EXPECT_GT(per_node["deepf"], 0u);
  EXPECT_EQ(per_node["deepe"], 0u);  // cores = 0: forwards only
  EXPECT_EQ(per_node["deepm"], 0u);
}

TEST(RunTest, BadExperimentFileNamesFileLineAndField) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "bad.toml",
                              "[[node]]\nname = \"m\"\n\n[[app]]\nname = \"x\"\nkernel = \"matmul\"\nn = -3\ntasks = 5\n");
  const auto r = run_command(treefarm_bin + " run " + exp);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad.toml:7"), std::string::npos) << r.output;
  // The message names the field and the accepted range, not just any "n".
  EXPECT_NE(r.output.find("field 'app[0].n'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("must be between 1 and 16384, got -3"), std::string::npos) << r.output;
}

TEST(RunTest, AbstractApplicationIsRefusedByRun) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "abstract.toml",
                              "[[node]]\nname = \"m\"\n[[node]]\nname = \"w\"\nparent = \"m\"\n"
                              "[[app]]\nname = \"x\"\nbytes = 1000\nflops = 1e6\ntasks = 5\n");
  const auto r = run_command(treefarm_bin + " run " + exp + " --timeout 30");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("abstract"), std::string::npos) << r.output;
}

TEST(RunTest, InterruptEndsEveryProcessItStarted) {
  TempDir dir;
  const std::string prefix = "intr" + std::to_string(getpid());
  const auto exp = write_file(dir.path() / "long.toml", deep_tree(prefix, 50000000));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = (dir.path() / "out").string();
    execl(treefarm_bin.c_str(), treefarm_bin.c_str(), "run", exp.c_str(), "--out", out.c_str(), "--quiet", nullptr);
    _exit(127);
  }
  // Wait until the whole tree is up (every worker process exists), then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (processes_mentioning(prefix + "f").empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_FALSE(processes_mentioning(prefix + "f").empty()) << "the tree never came up";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  // Nothing it started is left.
  for (int i = 0; i < 100 && !processes_mentioning(prefix).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(processes_mentioning(prefix).empty());
}

// Pooled inputs (--inputs pooled, docs/security.md): every task once, and with every result
// spot-checked the master's regenerated input (task index mod 2) matches what it sent, so
// nobody is convicted and nothing is wrong. An unknown mode is a usage error.
TEST(RunTest, PooledInputsRunExactlyOnceAndEverySpotCheckAgrees) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "pooled.toml", deep_tree("pool", 100));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() +
                             " --inputs pooled --spot-check 1 --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(read_file(out / "results.json"));
  EXPECT_EQ(j.at("settings").at("inputs"), "pooled");
  for (const auto& a : j.at("apps")) {
    EXPECT_EQ(a.at("completed"), a.at("tasks")) << a.at("name");
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u) << a.at("name");
  }
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (const auto& t : j.at("tasks"))
    EXPECT_TRUE(seen.insert({t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()}).second);
  EXPECT_EQ(seen.size(), 600u);
  const auto& log = r.output;  // the master logs to the run's stderr
  EXPECT_NE(log.find("0 nodes convicted of forging"), std::string::npos) << log;
  EXPECT_NE(log.find("pooled: 2 per application reused"), std::string::npos) << log;

  const auto bad = run_command(treefarm_bin + " run " + exp + " --inputs shared --quiet");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--inputs"), std::string::npos) << bad.output;
}

TEST(RunTest, EveryPolicyCompletesARealRunExactlyOnce) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "policies.toml", deep_tree("pol", 200));
  const auto out = dir.path() / "cmp";
  const auto r = run_command(treefarm_bin + " compare " + exp + " --out " + out.string() + " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(read_file(out / "compare.json"));
  std::set<std::string> seen;
  for (const auto& p : j.at("policies")) {
    const auto name = p.at("name").get<std::string>();
    seen.insert(name);
    EXPECT_TRUE(p.at("ok").get<bool>()) << name;
    EXPECT_GT(p.at("fair_throughput").get<double>(), 0.0) << name;
    EXPECT_FALSE(p.at("predicted_fair_throughput").is_null()) << name;
    // Every task exactly once in that policy's own results.
    const auto res = nlohmann::json::parse(read_file(out / name / "results.json"));
    std::set<std::pair<std::string, std::uint64_t>> tasks;
    for (const auto& t : res.at("tasks"))
      EXPECT_TRUE(tasks.insert({t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()}).second) << name;
    EXPECT_EQ(tasks.size(), 700u) << name;
    for (const auto& a : res.at("apps")) EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u) << name;
  }
  EXPECT_EQ(seen, (std::set<std::string>{"fcfs", "cgbc", "pbc", "lp", "data-centric", "price"}));
}

// Requirements (papers/lee2010 slides 17, 19): real processes with multi-resource requirements
// and queue balancing. "big" needs 2 GiB; only b and f declare 4 GiB (the others 1 GiB), and
// f sits under a forwarding node: every "big" task runs on b or f, every task once, with
// PULL migration balancing by MLL (and again by TLL over PUSH).
TEST(RunTest, RequirementsAndQueueBalancingRunEveryTaskWhereItFitsOnce) {
  TempDir dir;
  std::string tree = deep_tree("req", 150);
  for (const auto& [node, memory] : std::vector<std::pair<std::string, std::string>>{
           {"reqa", "1GiB"}, {"reqb", "4GiB"}, {"reqc", "1GiB"}, {"reqd", "1GiB"}, {"reqf", "4GiB"}}) {
    const std::string header = "name = \"" + node + "\"\n";
    tree.insert(tree.find(header) + header.size(), "memory = \"" + memory + "\"\n");
  }
  tree.insert(tree.find("[run]"), "[[app]]\nname = \"big\"\nkernel = \"noop\"\nbytes = 100\nmemory_per_task = \"2GiB\"\ntasks = 120\n");
  const auto exp = write_file(dir.path() / "req.toml", tree);
  for (const std::string how : {"--migration pull --balance mll", "--migration push --balance tll"}) {
    SCOPED_TRACE(how);
    const auto out = dir.path() / ("out" + std::to_string(how.size()));
    const auto r = run_command(treefarm_bin + " run " + exp + " " + how + " --out " + out.string() + " --quiet --timeout 120");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(read_file(out / "results.json"));
    std::set<std::pair<std::string, std::uint64_t>> seen;
    std::map<std::string, std::uint64_t> big_on;
    for (const auto& t : j.at("tasks")) {
      const auto app = t.at("app").get<std::string>();
      EXPECT_TRUE(seen.insert({app, t.at("id").get<std::uint64_t>()}).second) << app;
      if (app == "big") ++big_on[t.at("node").get<std::string>()];
    }
    EXPECT_EQ(seen.size(), 200u + 300u + 150u + 120u);
    std::uint64_t big = 0;
    for (const auto& [node, n] : big_on) {
      EXPECT_TRUE(node == "reqb" || node == "reqf") << n << " 'big' tasks on " << node << ", which has 1 GiB";
      big += n;
    }
    EXPECT_EQ(big, 120u);
  }
}

// `run --policy lp` without a calibration measures the platform first and says so (the
// default; --plan-from-estimates plans from the run's own estimates instead, not beside a
// calibration); a calibration of another experiment is refused naming what differs.
TEST(RunTest, PolicyLpCalibratesFirstAndAForeignCalibrationIsRefused) {
  TempDir dir;
  const std::string tree =
      "[[node]]\nname = \"cm\"\ncores = 0\n"
      "[[node]]\nname = \"ca\"\nparent = \"cm\"\ncores = 1\n"
      "[[node]]\nname = \"cb\"\nparent = \"cm\"\ncores = 1\n"
      "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 32\ntasks = 150\n"
      "[[app]]\nname = \"ma\"\nkernel = \"matadd\"\nn = 64\nweight = 2\ntasks = 300\n"
      "[run]\nbuffer = 4\n";
  const auto exp = write_file(dir.path() / "cal.toml", tree);
  const auto out = dir.path() / "out";
  const auto both = run_command(treefarm_bin + " run " + exp + " --policy lp --calibrate --plan-from-estimates --quiet");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("--plan-from-estimates: the plan comes from the run's own estimates"), std::string::npos)
      << both.output;
  const auto r = run_command(treefarm_bin + " run " + exp + " --policy lp --out " + out.string() +
                             " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no --calibration was given: calibrating first"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("treefarm run: calibrating first ("), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(out / "calibration.json"));
  const auto cal = nlohmann::json::parse(read_file(out / "calibration.json"));
  ASSERT_TRUE(cal.contains("apps")) << cal.dump();
  ASSERT_TRUE(cal.contains("hosts")) << cal.dump();
  EXPECT_GT(cal.at("hosts").at(0).at("cores").get<double>(), 0.0);
  const auto res = nlohmann::json::parse(read_file(out / "results.json"));
  EXPECT_GT(res.at("predicted_fair_throughput").get<double>(), 0.0) << res.dump().substr(0, 400);
  EXPECT_EQ(res.at("prediction_source").get<std::string>(), "calibration");
  // Every node of the lp policy reported its fallbacks, zero or not.
  ASSERT_TRUE(res.contains("policy_fallbacks")) << res.dump().substr(0, 400);
  EXPECT_EQ(res.at("policy_fallbacks").at("nodes").size(), 3u) << res.at("policy_fallbacks").dump();

  // The same calibration with a node renamed and a size changed: refused, both named.
  std::string other = tree;
  other.replace(other.find("n = 64"), 6, "n = 96");
  for (std::size_t at; (at = other.find("\"cb\"")) != std::string::npos;) other.replace(at, 4, "\"cz\"");
  const auto exp2 = write_file(dir.path() / "other.toml", other);
  const auto bad = run_command(treefarm_bin + " run " + exp2 + " --calibration " + (out / "calibration.json").string() +
                               " --out " + (dir.path() / "out2").string() + " --quiet --timeout 60");
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("does not match the experiment"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("node 'cz' is in the experiment, not in the calibration"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("application 'ma': n is 96 in the experiment, 64 in the calibration"), std::string::npos)
      << bad.output;
}

// Calibrate as you go (docs/live-model.md): `run --policy lp --plan-from-estimates` starts
// at once with FCFS, switches to the LP's plan once the run's own estimates are tight
// (loose thresholds here, and no deadline: only the rule can make the plan), says so, and
// records it; no task is lost or done twice across the switch.
TEST(RunTest, PolicyLpWithoutACalibrationPlansFromItsOwnEstimates) {
  TempDir dir;
  const std::string tree =
      "[[node]]\nname = \"gm\"\ncores = 0\n"
      "[[node]]\nname = \"ga\"\nparent = \"gm\"\ncores = 1\n"
      "[[node]]\nname = \"gb\"\nparent = \"gm\"\ncores = 1\n"
      "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 128\ntasks = 6000\n"
      "[[app]]\nname = \"ma\"\nkernel = \"matadd\"\nn = 128\nweight = 2\ntasks = 12000\n"
      "[run]\nbuffer = 4\npolicy = \"lp\"\n"
      "[policy.lp]\nplan_ci = 0.5\nplan_samples = 5\nplan_wait = 100000\n";
  const auto exp = write_file(dir.path() / "go.toml", tree);
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() +
                             " --plan-from-estimates --heartbeat-interval 0.2 --quiet --timeout 200");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("without --calibration: starting with FCFS"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "calibration.json")) << "calibrated first";
  const auto plan_line = r.output.find("plan ready at ");
  ASSERT_NE(plan_line, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(from the run's own estimates)", plan_line), std::string::npos) << r.output;
  const auto res = nlohmann::json::parse(read_file(out / "results.json"));
  const auto source = res.at("prediction_source").get<std::string>();
  ASSERT_EQ(source.rfind("estimates at ", 0), 0u) << source;
  EXPECT_LT(std::stod(source.substr(13)), res.at("duration").get<double>()) << source;
  EXPECT_GT(res.at("predicted_fair_throughput").get<double>(), 0.0);
  EXPECT_TRUE(res.contains("plan")) << res.dump().substr(0, 400);
  // Every task exactly once across the switch.
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (const auto& t : res.at("tasks"))
    EXPECT_TRUE(seen.insert({t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()}).second)
        << "task recorded twice: " << t.dump();
  EXPECT_EQ(seen.size(), 18000u);
  EXPECT_EQ(res.at("lost").get<std::uint64_t>(), 0u);
  EXPECT_TRUE(res.at("ok").get<bool>());
}
