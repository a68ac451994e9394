// Bags with their own inputs, with real processes on loopback (docs/command-tasks.md, "One
// task per file, per line, per number"): a task per file gives outputs byte-identical to
// the program run here, each task once; a lines bag lists exactly the lines whose task
// failed and `resubmit --failed` completes it once the program is fixed; max_retries
// completes a bag that fails once per task; a bag submitted without a file to a served
// tree and run without a file on this machine.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::testing {
namespace {

/// Tasks run as `nobody` under a root worker: what they read or write beside the test
/// must be open to them.
void open_to_tasks(const fs::path& path, bool writable) {
  using P = fs::perms;
  fs::permissions(path, writable ? P::all : P::owner_all | P::group_read | P::group_exec | P::others_read | P::others_exec);
}

nlohmann::json results_of(const fs::path& out) {
  std::ifstream f(out / "results.json");
  return nlohmann::json::parse(f);
}

/// `count` text files of different sizes (0 to ~40 KB, one empty) in DIR/data.
void make_files(const fs::path& dir, int count) {
  fs::create_directories(dir / "data");
  std::uint64_t state = 42;
  for (int i = 0; i < count; ++i) {
    std::ofstream f(dir / "data" / ("f" + std::to_string(1000 + i) + ".txt"));
    const int lines = (i * 7919) % 700;
    for (int l = 0; l < lines; ++l) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      f << "line " << l << " of file " << i << " value " << (state >> 40) << "\n";
    }
  }
  open_to_tasks(dir, false);
  open_to_tasks(dir / "data", false);
}

/// Every file of DIR/data has OUT/outputs/APP/NAME.gz equal to `gzip -9 -n` of it here.
void expect_gzip_outputs(const fs::path& dir, const fs::path& out, const std::string& app, int count) {
  int seen = 0;
  for (const auto& e : fs::directory_iterator(dir / "data")) {
    ++seen;
    const auto got = out / "outputs" / app / (e.path().filename().string() + ".gz");
    ASSERT_TRUE(fs::exists(got)) << got;
    const auto here = dir / "here.gz";
    ASSERT_EQ(run_command("gzip -9 -n -c " + e.path().string() + " > " + here.string()).exit_code, 0);
    EXPECT_EQ(read_file(got), read_file(here)) << e.path() << ": the output differs from gzip -9 -n run here";
  }
  EXPECT_EQ(seen, count);
  std::size_t outputs = 0;
  for (const auto& e : fs::directory_iterator(out / "outputs" / app)) outputs += e.path().extension() == ".gz" ? 1 : 0;
  EXPECT_EQ(outputs, static_cast<std::size_t>(count)) << "no stray or half-written outputs";
}

/// Every task of the results recorded once.
void expect_each_task_once(const nlohmann::json& j, std::uint64_t tasks) {
  std::set<std::uint64_t> ids;
  for (const auto& t : j.at("tasks")) EXPECT_TRUE(ids.insert(t.at("id").get<std::uint64_t>()).second) << t.dump();
  EXPECT_EQ(ids.size(), tasks);
  EXPECT_EQ(j.at("duplicates").get<std::uint64_t>(), 0u);
}

TEST(Bag, ThreeHundredFilesThroughTwoWorkersGiveTheOutputsOfGzipHereEachTaskOnce) {
  TempDir dir("bag-gzip");
  make_files(dir.path(), 300);
  const auto exp = write_file(dir.path() / "gz.toml", test_support::star_nodes_toml(2) + R"(
[[app]]
name = "gz"
kind = "command"
argv = ["gzip", "-9", "-n", "-c", "{input}"]
inputs = "data/*.txt"
output_file = "{name}.gz"
timeout = 60
)" + test_support::multiport_run_toml(4, "fcfs"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 240");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("outputs of 'gz': 300 files in " + (out / "outputs" / "gz").string()), std::string::npos) << r.output;
  expect_gzip_outputs(dir.path(), out, "gz", 300);
  const auto j = results_of(out);
  expect_each_task_once(j, 300);
  std::set<std::string> nodes;
  for (const auto& t : j.at("tasks")) nodes.insert(t.at("node").get<std::string>());
  EXPECT_EQ(nodes, (std::set<std::string>{"w1", "w2"})) << "both workers computed";
}

TEST(Bag, ALinesBagListsExactlyTheLinesThatFailedAndResubmitCompletesItOnceFixed) {
  TempDir dir("bag-lines");
  open_to_tasks(dir.path(), false);
  std::string params;
  for (int i = 1; i <= 30; ++i) params += "p" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "\n";
  write_file(dir.path() / "params.txt", params);
  const auto script = dir.path() / "check.sh";
  write_file(script, "case \"$1\" in p07|p13|p21) echo \"cannot handle $1\" >&2; exit 3;; esac\necho \"done $1\"\n");
  open_to_tasks(script, false);
  const auto exp = write_file(dir.path() / "lines.toml", test_support::star_nodes_toml(2) + R"(
[[app]]
name = "check"
kind = "command"
argv = ["sh", ")" + script.string() + R"(", "{line}"]
lines = "params.txt"
output_file = "{line}.out"
)" + test_support::multiport_run_toml(4, "fcfs"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("3 tasks failed:"), std::string::npos) << r.output;
  for (const char* p : {"p07", "p13", "p21"}) EXPECT_NE(r.output.find(std::string("(") + p + ") on"), std::string::npos) << p << r.output;
  const auto j = results_of(out);
  std::set<std::string> failed;
  for (const auto& f : j.at("failures")) {
    failed.insert(f.at("input").get<std::string>());
    EXPECT_NE(f.at("error").get<std::string>().find("cannot handle"), std::string::npos) << f.dump();
  }
  EXPECT_EQ(failed, (std::set<std::string>{"p07", "p13", "p21"}));
  EXPECT_EQ(j.at("apps")[0].at("failed").get<int>(), 3);
  EXPECT_EQ(j.at("failures").size(), 3u);

  // Fixed: only the three run again, into the same folder.
  write_file(script, "echo \"done $1\"\n");
  const auto again = run_command(treefarm_bin + " resubmit " + out.string() + " --failed --quiet --timeout 120");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const auto k = results_of(out);
  EXPECT_EQ(k.at("apps")[0].at("completed").get<int>(), 30);
  EXPECT_EQ(k.at("apps")[0].at("failed").get<int>(), 0);
  EXPECT_FALSE(k.contains("failures")) << k.at("failures").dump();
  expect_each_task_once(k, 30);
  for (int i = 1; i <= 30; ++i) {
    const std::string p = "p" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    EXPECT_EQ(read_file(out / "outputs" / "check" / (p + ".out")), "done " + p + "\n") << p;
  }
}

TEST(Bag, MaxRetriesCompletesABagWhoseProgramFailsOnceForEveryTask) {
  TempDir dir("bag-retry");
  open_to_tasks(dir.path(), false);
  const auto marks = dir.path() / "marks";
  fs::create_directories(marks);
  open_to_tasks(marks, true);
  // The first run of each number leaves a mark and fails; the second finds it and succeeds.
  const auto exp = write_file(dir.path() / "retry.toml", test_support::star_nodes_toml(2) + R"(
[[app]]
name = "flaky"
kind = "command"
argv = ["sh", "-c", "f=)" + marks.string() + R"(/{index}; if [ -e $f ]; then echo ok {index}; exit 0; fi; touch $f; echo transient >&2; exit 1"]
array = "1-40"
max_retries = 2
)" + test_support::multiport_run_toml(4, "fcfs"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = results_of(out);
  EXPECT_EQ(j.at("apps")[0].at("completed").get<int>(), 40);
  EXPECT_EQ(j.at("apps")[0].at("failed").get<int>(), 0);
  expect_each_task_once(j, 40);
  for (int i = 1; i <= 40; ++i) EXPECT_TRUE(fs::exists(marks / std::to_string(i))) << i;
  // Each retry ran on the other worker than the attempt that failed.
  std::map<std::uint64_t, std::string> failed_on;
  const std::string logs = r.output + (fs::exists(out / "logs" / "master.log") ? read_file(out / "logs" / "master.log") : "");
  static const std::regex failed("task ([0-9]+) of 'flaky' failed on (\\S+) ");
  for (auto it = std::sregex_iterator(logs.begin(), logs.end(), failed); it != std::sregex_iterator(); ++it)
    failed_on[std::stoull((*it)[1])] = (*it)[2];
  EXPECT_EQ(failed_on.size(), 40u) << logs.substr(0, 3000);
  for (const auto& t : j.at("tasks"))
    if (auto f = failed_on.find(t.at("id").get<std::uint64_t>()); f != failed_on.end()) {
      EXPECT_NE(t.at("node").get<std::string>(), f->second) << "task " << f->first << " retried where it failed";
    }

  // Without retries the same bag fails every task once.
  for (const auto& e : fs::directory_iterator(marks)) fs::remove(e.path());
  const auto exp0 = write_file(dir.path() / "noretry.toml", read_file(exp).replace(read_file(exp).find("max_retries = 2"), 15, "max_retries = 0"));
  const auto r0 = run_command(treefarm_bin + " run " + exp0 + " --out " + (dir.path() / "out0").string() + " --quiet --timeout 120");
  EXPECT_EQ(r0.exit_code, 4) << r0.output;
  EXPECT_EQ(results_of(dir.path() / "out0").at("failures").size(), 40u);
}

// A uniform bag whose tasks sleep (their time hardly depends on the machine's load; a
// second each, so that the containment's own cost, tens of milliseconds under load, stays
// small beside it): the prediction made once a tenth of the tasks were done ends within
// 10 % of the actual end (about 20 s).
TEST(Bag, TheEtaAtATenthOfAUniformBagIsWithinTenPercentOfTheActualEnd) {
  TempDir dir("bag-eta");
  const auto exp = write_file(dir.path() / "eta.toml", test_support::star_nodes_toml(2) + R"(
[[app]]
name = "nap"
kind = "command"
argv = ["sleep", "1"]
array = "1-40"
)" + test_support::multiport_run_toml(2, "fcfs"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --timeout 120 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tasks/s predicted"), std::string::npos) << "the progress line shows the prediction\n" << r.output;
  EXPECT_NE(r.output.find("ETA at 1"), std::string::npos) << "predicted against actual at the end\n" << r.output;
  const auto j = results_of(out);
  ASSERT_TRUE(j.contains("eta")) << r.output;
  const auto& eta = j.at("eta");
  EXPECT_GE(eta.at("fraction_done").get<double>(), 0.1);
  EXPECT_LT(eta.at("fraction_done").get<double>(), 0.5) << "made early in the run";
  EXPECT_NEAR(eta.at("ratio").get<double>(), 1.0, 0.1) << eta.dump();
  EXPECT_NEAR(eta.at("actual_end").get<double>(), j.at("duration").get<double>(), 0.5) << eta.dump();
}

TEST(Bag, SubmittedWithoutAFileToAServedTreeGivesTheOutputsOfGzipHere) {
  TempDir dir("bag-submit");
  make_files(dir.path(), 60);
  const std::string tag = "bs" + std::to_string(getpid());
  // Command applications: an ipc:// channel of this user and --allow-commands (docs/security.md).
  Child master(served_master_args(dir, {.ipc = true, .allow_commands = true, .live_wait = "20", .fast_heartbeats = true}),
               dir.path() / "master.log");
  const auto mep = wait_for_line(dir.path() / "m.ep");
  const auto sep = wait_for_line(dir.path() / "submit.ep");
  ASSERT_FALSE(mep.empty() || sep.empty()) << master.output();
  std::vector<std::unique_ptr<Child>> workers;
  for (const char* w : {"w1", "w2"})
    workers.push_back(std::make_unique<Child>(
        std::vector<std::string>{worker_bin, "--parent", mep, "--name", tag + w, "--cores", "1", "--listen", "",
                                 "--heartbeat-timeout", "2", "--heartbeat-interval", "0.3"},
        dir.path() / (std::string(w) + ".log")));
  ASSERT_TRUE(wait_until([&] {
    const auto s = run_command(treefarm_bin + " status --json --to " + sep);
    return s.exit_code == 0 && nlohmann::json::parse(s.output.substr(s.output.find('{'))).at("waiting").size() == 2;
  }, 30)) << master.output();

  const auto out = dir.path() / "out";
  const auto r = run_command("cd " + dir.path().string() + " && " + treefarm_bin + " submit --to " + sep +
                             " --inputs 'data/*.txt' --output-file '{name}.gz' --out " + out.string() +
                             " --timeout 120 -- gzip -9 -n -c {input}");
  ASSERT_EQ(r.exit_code, 0) << r.output << master.output();
  ASSERT_TRUE(fs::exists(out / "experiment.toml")) << "the experiment it built is kept";
  EXPECT_NE(read_file(out / "experiment.toml").find("inputs = 'data/*.txt'"), std::string::npos) << read_file(out / "experiment.toml");
  expect_gzip_outputs(dir.path(), out, "bag", 60);
  expect_each_task_once(results_of(out), 60);
}

TEST(Bag, RunLocalWithoutAFileRunsAnArrayOnThisMachine) {
  TempDir dir("bag-local");
  const auto out = dir.path() / "out";
  const auto r = run_command("cd " + dir.path().string() + " && " + treefarm_bin +
                             " run --local --array 1-20:2 --output-file 'n{index}.txt' --out " + out.string() +
                             " --quiet --timeout 120 -- sh -c 'echo number {index}'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(out / "experiment.toml"));
  for (int n = 1; n <= 19; n += 2) EXPECT_EQ(read_file(out / "outputs" / "bag" / ("n" + std::to_string(n) + ".txt")), "number " + std::to_string(n) + "\n") << n;
  expect_each_task_once(results_of(out), 10);
  // Usage mistakes exit 2 with what was expected.
  const auto none = run_command(treefarm_bin + " run --local --array 1-3 --out " + out.string());
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("no program"), std::string::npos) << none.output;
  const auto two = run_command(treefarm_bin + " run --array 1-3 --each-line x -- true");
  EXPECT_EQ(two.exit_code, 2) << two.output;
  // A bag option beside an experiment file is a mistake, not a program named like the file.
  const auto exp = write_file(dir.path() / "x.toml", test_support::star_nodes_toml(1) +
                                                        "[[app]]\nname = \"n\"\nkernel = \"noop\"\nbytes = 8\ntasks = 2\n");
  for (const std::string opt : {" --inputs shared", " --array 1-3"}) {
    const auto both = run_command("cd " + dir.path().string() + " && " + treefarm_bin + " run " + exp + opt + " --quiet");
    EXPECT_EQ(both.exit_code, 2) << opt << both.output;
    EXPECT_FALSE(fs::exists(dir.path() / "out" / "bag")) << "nothing built";
  }
}

}  // namespace
}  // namespace treefarm::testing
