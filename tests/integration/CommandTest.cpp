// Integration tests of the application kind `command` (docs/command-tasks.md):
// the user's program run by real workers, once per task; a failing program reported
// with its stderr and a clear exit code; calibrated and predicted like a kernel.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "tests/support/TreeToml.hpp"
#include "tests/integration/ProcessTestUtil.hpp"

namespace treefarm::testing {
namespace {

/// A master that only forwards and two one-core workers, one application of `app_toml`.
std::string command_tree(const std::string& app_toml) {
  return test_support::star_nodes_toml(2) + app_toml + "\n" + test_support::multiport_run_toml(4, "fcfs");
}

/// Command tasks of a worker running as root run as `nobody` (docs/command-tasks.md,
/// "Containment"): a test whose program writes beside the test opens `path` (a file or a
/// folder in `dir`) to them.
void writable_by_tasks(const fs::path& dir, const fs::path& path) {
  using P = fs::perms;
  fs::permissions(dir, P::owner_all | P::group_read | P::group_exec | P::others_read | P::others_exec);
  if (!fs::exists(path)) std::ofstream(path).flush();
  fs::permissions(path, fs::is_directory(path) ? P::all : P::owner_read | P::owner_write | P::group_read |
                                                            P::group_write | P::others_read | P::others_write);
}

nlohmann::json results_of(const fs::path& out) {
  std::ifstream f(out / "results.json");
  return nlohmann::json::parse(f);
}

TEST(CommandTest, GzipRunsExactlyOncePerTaskOnTheWorkers) {
  TempDir dir("cmd-once");
  const auto log = dir.path() / "ran.log";
  writable_by_tasks(dir.path(), log);
  // Every run appends its index and worker-side input size: a task run twice (or never)
  // shows in the log, whatever results.json says.
  const auto exp = write_file(dir.path() / "gzip.toml", command_tree(R"([[app]]
name = "gz"
kind = "command"
argv = ["sh", "-c", "echo {index} $(wc -c < {input}) >> )" + log.string() + R"(; exec gzip -9 -n -c {input}"]
bytes = "32KiB"
tasks = 40
timeout = 60
)"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  std::ifstream f(log);
  std::multiset<std::uint64_t> ran;
  std::uint64_t index = 0, size = 0;
  while (f >> index >> size) {
    ran.insert(index);
    EXPECT_EQ(size, 32u * 1024) << "the input file holds the task's whole input";
  }
  ASSERT_EQ(ran.size(), 40u);
  for (std::uint64_t i = 0; i < 40; ++i) EXPECT_EQ(ran.count(i), 1u) << "task " << i;

  const auto j = results_of(out);
  ASSERT_EQ(j.at("apps").size(), 1u);
  EXPECT_EQ(j.at("apps")[0].at("kernel"), "command");
  EXPECT_EQ(j.at("apps")[0].at("completed"), 40u);
  EXPECT_EQ(j.at("apps")[0].at("failed"), 0u);
  EXPECT_FALSE(j.contains("failures"));
  std::set<std::string> nodes;
  for (const auto& t : j.at("tasks")) nodes.insert(t.at("node").get<std::string>());
  EXPECT_FALSE(nodes.contains("master")) << "the master has no cores here";
  EXPECT_TRUE(j.at("ok").get<bool>());
}

TEST(CommandTest, FailingCommandIsCountedFailedWithItsStderrAndTheRunEndsWithExitCode4) {
  TempDir dir("cmd-fail");
  const auto exp = write_file(dir.path() / "fail.toml", command_tree(R"([[app]]
name = "bad"
kind = "command"
argv = ["sh", "-c", "echo 'no good {index}' >&2; false"]
bytes = 100
tasks = 6
)"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  EXPECT_EQ(r.exit_code, 4) << r.output;  // wrong results: the run ended, but not every task succeeded
  const auto j = results_of(out);
  EXPECT_EQ(j.at("apps")[0].at("failed"), 6u);
  EXPECT_FALSE(j.at("ok").get<bool>());
  ASSERT_EQ(j.at("failures").size(), 6u);
  std::set<std::uint64_t> ids;
  for (const auto& failure : j.at("failures")) {
    const auto id = failure.at("id").get<std::uint64_t>();
    ids.insert(id);
    const auto error = failure.at("error").get<std::string>();
    EXPECT_NE(error.find("exit status 1"), std::string::npos) << error;
    EXPECT_NE(error.find("no good " + std::to_string(id)), std::string::npos) << error;
    EXPECT_TRUE(failure.at("node") == "w1" || failure.at("node") == "w2") << failure;
  }
  EXPECT_EQ(ids.size(), 6u);
}

TEST(CommandTest, CalibratedRunPrintsThePredictionBesideTheMeasuredThroughput) {
  TempDir dir("cmd-predict");
  const auto exp = write_file(dir.path() / "predict.toml", command_tree(R"([[app]]
name = "gz"
kind = "command"
argv = ["gzip", "-9", "-n"]
bytes = "16KiB"
tasks = 30
)"));
  const auto out = dir.path() / "out";
  const auto r =
      run_command(treefarm_bin + " run " + exp + " --calibrate --out " + out.string() + " --quiet --timeout 180");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = results_of(out);
  const auto& app = j.at("apps")[0];
  EXPECT_EQ(app.at("completed"), 30u);
  ASSERT_TRUE(app.contains("predicted")) << app;
  EXPECT_GT(app.at("predicted").get<double>(), 0.0);
  EXPECT_GT(app.at("throughput").get<double>(), 0.0);
}

TEST(CommandTest, BadCommandApplicationNamesFileLineAndField) {
  TempDir dir("cmd-bad");
  const auto exp = write_file(dir.path() / "bad.toml", command_tree(R"([[app]]
name = "gz"
kind = "command"
argv = "gzip -9"
bytes = 100
tasks = 3
)"));
  const auto r = run_command(treefarm_bin + " run " + exp + " --quiet --timeout 60");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("bad.toml:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("app[0].argv"), std::string::npos) << r.output;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Output files (docs/command-tasks.md, "Output files"): each task's gzip output comes
// back to the master through the tree (w1a and w1b's through w1) and is written once as
// OUT/outputs/gz/INDEX.gz; each decompresses to the input that task was given (which the
// command also copies aside, so that the test can compare).
TEST(CommandTest, GzipOutputsComeBackOncePerTaskAndDecompressToTheirInputs) {
  TempDir dir("cmd-outputs");
  const auto inputs = dir.path() / "inputs";
  fs::create_directories(inputs);
  writable_by_tasks(dir.path(), inputs);
  const auto exp = write_file(dir.path() / "gzip.toml", test_support::quickstart_nodes_toml() + R"([[app]]
name = "gz"
kind = "command"
argv = ["sh", "-c", "cp {input} )" + inputs.string() + R"(/{index}; exec gzip -9 -n -c {input}"]
bytes = "64KiB"
tasks = 40
timeout = 60
output_file = "{index}.gz"
)" + "\n" + test_support::multiport_run_toml(4, "fcfs"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const auto outputs = out / "outputs" / "gz";
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(outputs)) files.insert(e.path().filename().string());
  EXPECT_EQ(files.size(), 40u) << "an output is missing, or a part file was left";
  for (int i = 0; i < 40; ++i) {
    const auto gz = outputs / (std::to_string(i) + ".gz");
    ASSERT_TRUE(fs::exists(gz)) << gz;
    const auto unpacked = run_command("gzip -d -c " + gz.string() + " > " + (dir.path() / "unpacked").string());
    ASSERT_EQ(unpacked.exit_code, 0) << unpacked.output;
    const auto input = read_bytes(inputs / std::to_string(i));
    EXPECT_EQ(input.size(), 64u * 1024);
    EXPECT_TRUE(read_bytes(dir.path() / "unpacked") == input) << "task " << i << "'s output is not its input gzipped";
  }
  const auto j = results_of(out);
  EXPECT_EQ(j.at("apps")[0].at("completed"), 40u);
  EXPECT_EQ(j.at("apps")[0].at("failed"), 0u);
  std::set<std::string> nodes;
  for (const auto& t : j.at("tasks")) nodes.insert(t.at("node").get<std::string>());
  EXPECT_TRUE(nodes.contains("w1a") || nodes.contains("w1b")) << "no output came through the inner node w1";
}

// The outputs' bytes in the model (docs/command-tasks.md, "Prediction"): the calibration
// measures the size of the output each node's runs write, and the LP charges it on the
// way up (result_bytes in `predict --json`).
TEST(CommandTest, CalibrationMeasuresTheOutputSizeAndThePredictionChargesIt) {
  TempDir dir("cmd-output-bytes");
  const auto exp = write_file(dir.path() / "out.toml", command_tree(R"([[app]]
name = "zeros"
kind = "command"
argv = ["head", "-c", "5000", "/dev/zero"]
bytes = "1KiB"
tasks = 10
output_file = "{index}.bin"
)"));
  const auto cal = dir.path() / "cal.json";
  const auto r = run_command(treefarm_bin + " calibrate " + exp + " --out " + cal.string() + " --reps 3 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(5000 bytes of output)"), std::string::npos) << r.output;
  std::ifstream f(cal);
  const auto j = nlohmann::json::parse(f);
  int measured = 0;
  for (const auto& node : j.at("nodes")) {
    if (node.at("cores").get<int>() == 0) continue;
    ASSERT_TRUE(node.contains("output_bytes")) << node;
    EXPECT_EQ(node.at("output_bytes").at("zeros").get<double>(), 5000.0) << node;
    ++measured;
  }
  EXPECT_EQ(measured, 2);
  const auto p = run_command(treefarm_bin + " predict " + exp + " --calibration " + cal.string() + " --json 2>&1");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const auto pj = nlohmann::json::parse(p.output.substr(p.output.find('{')));
  EXPECT_EQ(pj.at("apps")[0].at("result_bytes").get<double>(), 5000.0) << pj;
}

TEST(CommandTest, AnOutputOverMaxOutputBytesFailsThatTaskOnly) {
  TempDir dir("cmd-output-limit");
  const auto exp = write_file(dir.path() / "big.toml", command_tree(R"([[app]]
name = "gz"
kind = "command"
argv = ["sh", "-c", "if [ {index} = 3 ]; then head -c 3000 /dev/zero; else gzip -n -c {input}; fi"]
bytes = "1KiB"
tasks = 12
output_file = "out-{index}.gz"
max_output_bytes = 2000
)"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  EXPECT_EQ(r.exit_code, 4) << r.output;  // one task failed
  const auto j = results_of(out);
  EXPECT_EQ(j.at("apps")[0].at("failed"), 1u);
  ASSERT_EQ(j.at("failures").size(), 1u);
  EXPECT_EQ(j.at("failures")[0].at("id"), 3u);
  const auto error = j.at("failures")[0].at("error").get<std::string>();
  EXPECT_NE(error.find("output over max_output_bytes 2000 (stopped while running)"), std::string::npos) << error;
  const auto outputs = out / "outputs" / "gz";
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(fs::exists(outputs / ("out-" + std::to_string(i) + ".gz")), i != 3) << "task " << i;
}

TEST(CommandTest, AnOutputFileThatIsAPathIsRefusedWithFileLineAndField) {
  TempDir dir("cmd-output-bad");
  const auto exp = write_file(dir.path() / "bad.toml", command_tree(R"([[app]]
name = "gz"
kind = "command"
argv = ["gzip", "-c"]
bytes = 100
tasks = 3
output_file = "../{index}.gz"
)"));
  const auto r = run_command(treefarm_bin + " run " + exp + " --quiet --timeout 60");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  // The line of the output_file key in the written file (the tree's node tables come first).
  std::ifstream in(exp);
  std::string text;
  int line = 0, key_line = 0;
  while (std::getline(in, text))
    if (++line > 0 && text.rfind("output_file", 0) == 0) key_line = line;
  ASSERT_GT(key_line, 0);
  EXPECT_NE(r.output.find("bad.toml:" + std::to_string(key_line) + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("app[0].output_file"), std::string::npos) << r.output;
}

// Containment (docs/command-tasks.md): workers started as root run each task as `nobody`,
// in its own folder, and nothing a task started in the background survives it.
TEST(CommandTest, WorkersAsRootRunTasksAsNobodyInTheirOwnFolderAndLeaveNoProcessBehind) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the workers must run as root for their tasks to become nobody";
  TempDir dir("cmd-contained");
  const std::string marker = "1000." + std::to_string(::getpid()) + "7";  // sleep's duration, unique on the machine
  const auto exp = write_file(dir.path() / "who.toml", command_tree(R"([[app]]
name = "who"
kind = "command"
argv = ["sh", "-c", "id -u; pwd; sleep )" + marker + R"( &"]
bytes = 10
tasks = 6
timeout = 60
output_file = "{index}.txt"
)"));
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  const auto left = processes_mentioning(marker);
  for (pid_t p : left) ::kill(p, SIGKILL);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(left.empty()) << left.size() << " background sleep(s) outlived their tasks";
  std::set<std::string> folders;
  for (int i = 0; i < 6; ++i) {
    std::istringstream text(read_file(out / "outputs" / "who" / (std::to_string(i) + ".txt")));
    std::string uid, folder;
    text >> uid >> folder;
    EXPECT_EQ(uid, "65534") << "task " << i << " ran as uid " << uid;
    EXPECT_NE(folder.find("/treefarm-task-"), std::string::npos) << folder;
    EXPECT_FALSE(fs::exists(folder)) << folder << " was not removed";
    folders.insert(folder);
  }
  EXPECT_EQ(folders.size(), 6u) << "each task has a folder of its own";
}

// A worker stopped while its tasks run (SIGTERM from `treefarm run` at its timeout) kills
// every process of theirs, those that left their session included, before it exits.
TEST(CommandTest, AWorkerStoppedMidTaskLeavesNoProcessOfItsTasksBehind) {
  TempDir dir("cmd-stopped");
  const std::string marker = "1000." + std::to_string(::getpid()) + "3";  // sleep's duration, unique on the machine
  const auto exp = write_file(dir.path() / "hang.toml", command_tree(R"([[app]]
name = "hang"
kind = "command"
argv = ["sh", "-c", "setsid sleep )" + marker + R"( & sleep )" + marker + R"("]
bytes = 10
tasks = 4
)"));
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + (dir.path() / "out").string() +
                             " --quiet --timeout 3");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a killed process leaves /proc at once; be generous
  const auto left = processes_mentioning(marker);
  for (pid_t p : left) ::kill(p, SIGKILL);
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_TRUE(left.empty()) << left.size() << " sleep(s) outlived the stopped workers";
}

}  // namespace
}  // namespace treefarm::testing
