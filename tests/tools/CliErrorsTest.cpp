// Everyday use of the three executables: every documented error case as a table (command,
// exit code, message, how long it may take), the one error format, the one exit-code table
// in --help, docs/commands.md and the man pages, and what a command leaves behind.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/node/ExitCode.hpp"
#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::testing {
namespace {

const std::string treefarm = bin_dir + "/treefarm";
const std::string master = bin_dir + "/treefarm-master";
const std::string worker = bin_dir + "/treefarm-worker";
const fs::path source_dir = TREEFARM_SOURCE_DIR;

const std::string tiny = test_support::star_nodes_toml(1) +
                         "[[app]]\nname = \"noop\"\nkernel = \"noop\"\nbytes = 1e3\ntasks = 50\n";

/// The files the table's commands read, in a fresh directory per test.
class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(dir_.path() / "tiny.toml", tiny);
    // Another experiment (another application), and a calibration that is its own.
    write_file(dir_.path() / "other.toml", test_support::star_nodes_toml(1) +
                                               "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 32\ntasks = 10\n");
    write_file(dir_.path() / "other-cal.json",
               R"({"format":"treefarm-calibration","version":1,"experiment":"other.toml","measured_at":0,)"
               R"("nodes":[{"name":"master","cores":1,"task_seconds":{"mm":0.001}},)"
               R"({"name":"w1","parent":"master","cores":1,"task_seconds":{"mm":0.001},"link_bandwidth":1e9}]})");
    // n = 4096: 256 MiB of input per task.
    write_file(dir_.path() / "big.toml", test_support::star_nodes_toml(1) +
                                             "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 4096\ntasks = 2\n");
    write_file(dir_.path() / "big-buffer.toml", test_support::star_nodes_toml(1) +
                                                    "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 4096\ntasks = 2\n"
                                                    "[run]\nbuffer = 1000000\n");
    write_file(dir_.path() / "apps.toml", "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 1024\ntasks = 100\n");
    write_file(dir_.path() / "bad-machines.toml",
               "[[lan]]\nname = \"a\"\nbandwidth = \"1Gbps\"\n\n[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = \"quick\"\n");
    write_file(dir_.path() / "bad-key", "not a key\n");
    fs::create_directories(dir_.path() / "authz" / "authorized_keys");  // a folder where the file should be
    write_file(dir_.path() / "bad.toml", tiny + "cores_per_task = \"two\"\n");
  }
  /// `text` with {dir} replaced by the test's directory.
  std::string at(std::string text) const {
    for (std::size_t p; (p = text.find("{dir}")) != std::string::npos;) text.replace(p, 5, dir_.path().string());
    return text;
  }
  TempDir dir_{"cli-errors"};
};

/// stdout only (stderr discarded): what a script reading stdout sees, in its order.
CommandResult run_stdout_only(const std::string& cmd) {
  auto r = test_support::run_shell(cmd + " 2>/dev/null");
  return {r.exit_code, std::move(r.output)};
}

struct Case {
  std::string command;  ///< {dir}: the test's directory
  int exit_code;
  std::string message;  ///< found in stdout + stderr ({dir} replaced)
  double seconds;       ///< at most (generous: the machine is loaded)
};

/// Each documented refusal: before anything starts, with the exit code of the table, the
/// program's error format and the word that was wrong.
TEST_F(CliErrors, EveryDocumentedErrorCase) {
  const std::vector<Case> cases = {
      // Unknown words are named (not "A subcommand is required", "--parent is required").
      {treefarm + " nosuch", 2, "treefarm: error: unknown command 'nosuch' for 'treefarm' (commands: run,", 10},
      {treefarm + " bench nosuch", 2, "treefarm: error: unknown command 'nosuch' for 'treefarm bench'", 10},
      {treefarm + " run {dir}/tiny.toml --nosuch", 2, "treefarm: error: unknown option '--nosuch' for 'treefarm run'", 10},
      {worker + " --nosuch", 2, "treefarm-worker: error: unknown option '--nosuch' for 'treefarm-worker'", 10},
      {master + " --nosuch", 2, "treefarm-master: error: unknown option '--nosuch' for 'treefarm-master'", 10},
      {treefarm + " run", 2, "treefarm: error: give an experiment file, or --each-line FILE", 10},
      // --version after a subcommand, as the README promises.
      {treefarm + " run --version", 0, "treefarm 0.", 10},
      {treefarm + " plan --version", 0, "treefarm 0.", 10},
      // Options that exclude or need each other, and bad values: 2.
      {treefarm + " run {dir}/tiny.toml --calibrate --calibration {dir}/other-cal.json", 2, "treefarm: error: --calibration excludes --calibrate", 10},
      {treefarm + " run {dir}/tiny.toml --policy nosuch", 2, "unknown policy 'nosuch'; expected one of: fcfs", 10},
      {treefarm + " simulate {dir}/tiny.toml --policy nosuch", 2, "unknown policy 'nosuch'", 10},
      {master + " {dir}/tiny.toml --policy nosuch", 2, "treefarm-master: error: --policy: unknown policy 'nosuch'", 10},
      {treefarm + " run {dir}/tiny.toml --resume", 2, "treefarm: error: --resume continues the journal in OUT: give --out DIR", 10},
      {treefarm + " gen-platform --nodes 0 --max-degree 2 --apps 1 --seed 1", 2, "treefarm: error: gen-platform: --nodes must be >= 1", 10},
      {treefarm + " run {dir}/big.toml --buffer 1000000", 2, "treefarm: error: --buffer 1000000: 2 nodes each holding up to", 10},
      {treefarm + " report {dir}/tiny.toml --bin 0", 2, "--bin: must be > 0 seconds, got 0", 10},
      // Bad input files: 3, naming the file.
      {treefarm + " run {dir}/big-buffer.toml", 3, "treefarm: error: {dir}/big-buffer.toml: field 'run.buffer'", 10},
      {treefarm + " run {dir}/tiny.toml --calibration {dir}/other-cal.json", 3, "{dir}/other-cal.json: this calibration", 10},
      {treefarm + " predict {dir}/tiny.toml --calibration {dir}/other-cal.json", 3, "does not match the experiment", 10},
      {master + " {dir}/bad.toml --out {dir}/m", 3, "treefarm-master: error: {dir}/bad.toml:", 10},
      {treefarm + " plan {dir}/bad-machines.toml --apps {dir}/apps.toml", 3, "treefarm: error: {dir}/bad-machines.toml:8", 20},
      {worker + " tcp://127.0.0.1:1 --curve-secret {dir}/bad-key --parent-key {dir}/bad-key", 3, "treefarm-worker: error: ", 10},
      {treefarm + " report {dir}/tiny.toml", 3, "treefarm: error: {dir}/tiny.toml", 10},
      // Key files that cannot be read: bad input, as for the master and the worker.
      {treefarm + " probe --workers tcp://127.0.0.1:1,tcp://127.0.0.1:2 --keys {dir} --curve-secret {dir}/bad-key", 3,
       "treefarm: error: ", 10},
      {treefarm + " status --to tcp://127.0.0.1:1 --curve-secret {dir}/bad-key --server-key {dir}/bad-key", 3, "treefarm: error: ", 10},
      {treefarm + " keygen a --out {dir}/authz", 3, "treefarm: error: {dir}/authz/authorized_keys: not a readable", 10},
      // launch and bench refusals in the one format, with the table's codes.
      {treefarm + " launch {dir}/tiny.toml --out {dir}/lo", 2, "treefarm: error: launch: give either --hosts", 10},
      {treefarm + " bench dispatch --comm-model nosuch", 2, "treefarm: error: --comm-model: nosuch not in", 10},
      {treefarm + " bench dispatch --encryption --dashboard", 2, "treefarm: error: --encryption excludes --dashboard", 10},
      {treefarm + " compare {dir}/tiny.toml --policies fcfs,nosuch", 2, "treefarm: error: --policies: unknown policy 'nosuch'", 10},
      // Options after '--' are the program's: said, not read.
      {treefarm + " run --local -- echo {input} --inputs '*.txt'", 2, "before '--' (--inputs comes after it", 10},
      // A bag option beside an experiment file is refused, not ignored.
      {treefarm + " run {dir}/tiny.toml --output-file x", 2, "treefarm: error: --output-file shapes a bag without an experiment file", 10},
      // CLI11 would read -3 into an unsigned option as 2^64 - 3.
      {treefarm + " bench dispatch --bytes -3", 2, "--bytes: must be a whole number >= 0, got -3", 10},
      {treefarm + " launch {dir}/tiny.toml --hosts {dir}/tiny.toml --out {dir}/lo --timeout -1", 2, "--timeout: must be >= 0 seconds", 10},
      // An --out that cannot be written: checked before anything runs.
      {treefarm + " simulate {dir}/tiny.toml --out /proc/treefarm-no", 1, "/proc/treefarm-no", 10},
      {treefarm + " calibrate {dir}/tiny.toml --out /proc/treefarm-no/cal.json", 1, "/proc/treefarm-no", 10},
      // ... in the one wording: the option, the folder, what the system said.
      {treefarm + " run {dir}/tiny.toml --out /proc/treefarm-no", 1,
       "treefarm: error: --out /proc/treefarm-no: cannot create folder: No such file or directory", 10},
      {treefarm + " sweep {dir}/other.toml --app mm --n 8 --out /proc/treefarm-no", 1,
       "treefarm: error: --out /proc/treefarm-no: cannot create folder: No such file or directory", 10},
      {treefarm + " compare {dir}/tiny.toml --no-calibrate --out /proc/treefarm-no", 1,
       "treefarm: error: --out /proc/treefarm-no: cannot create folder: No such file or directory", 10},
      {treefarm + " report {dir}/tiny.toml --out /proc/treefarm-no", 1,
       "treefarm: error: --out /proc/treefarm-no: cannot create folder: No such file or directory", 10},
      {treefarm + " run {dir}/tiny.toml --out {dir}/tiny.toml/x", 1,
       "treefarm: error: --out {dir}/tiny.toml/x: cannot create folder: Not a directory", 10},
  };
  for (const auto& c : cases) {
    const std::string cmd = at(c.command);
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_command(cmd);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, c.exit_code) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find(at(c.message)), std::string::npos) << cmd << "\nwanted: " << at(c.message) << "\ngot:\n" << r.output;
    EXPECT_LE(took, c.seconds) << cmd << " took " << took << " s";
    if (c.exit_code != 0) {
      // One error format: the first line of stderr that is not a log line says PROGRAM: error:.
      static const std::regex format("(^|\n)treefarm(-master|-worker)?: error: ");
      EXPECT_TRUE(std::regex_search(r.output, format)) << cmd << "\n" << r.output;
      EXPECT_EQ(r.output.find("[error]"), std::string::npos) << "a log line instead of the error format: " << cmd << "\n"
                                                              << r.output;
      EXPECT_LT(r.output.size(), 2000u) << "a readable message, not a dump: " << cmd << "\n" << r.output;
    }
  }
  EXPECT_FALSE(fs::exists("/proc/treefarm-no"));
}

/// `plan` says 4 when the QoS is not met, as the table (and docs/planning.md) say.
TEST_F(CliErrors, PlanQosNotMetIsFour) {
  ASSERT_EQ(run_command(treefarm + " gen-machines --machines 4 --lans 2 --seed 1 --out " + at("{dir}/m.toml")).exit_code, 0);
  const auto r = run_command(treefarm + " plan " + at("{dir}/m.toml --apps {dir}/apps.toml --qos 1e9"));
  EXPECT_EQ(r.exit_code, node::exit_wrong_results) << r.output;
  const std::string planning = read_file(source_dir / "docs" / "planning.md");
  EXPECT_NE(planning.find("4 the QoS is not met"), std::string::npos);
  EXPECT_NE(planning.find("3 a bad machines"), std::string::npos);
}

// ---- what a command leaves behind, and what it says ----------------------------------

/// Entries of a directory (none if it does not exist).
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  return out;
}

/// Temporary directories: removed after a refused run and after a calibration; a run
/// without --out keeps its results and says where (a `results: PATH` line).
TEST_F(CliErrors, NothingLeftBehindInTmpAndKeptResultsAreNamed) {
  const fs::path tmp = dir_.path() / "tmp";
  fs::create_directories(tmp);
  const std::string env = "TMPDIR=" + tmp.string() + " ";
  const auto refused = run_command(env + treefarm + " run " + at("{dir}/tiny.toml") + " --balance tll --timeout 60");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("--balance"), std::string::npos) << refused.output;
  EXPECT_TRUE(entries(tmp).empty()) << "left behind: " << entries(tmp).front();

  const auto quiet = run_command(env + treefarm + " run " + at("{dir}/tiny.toml") + " --quiet --timeout 60");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(quiet.output, m, std::regex("results: (\\S+/results.json)\n"))) << quiet.output;
  EXPECT_TRUE(fs::exists(m[1].str())) << m[1];
  EXPECT_EQ(m[1].str().rfind(tmp.string(), 0), 0u) << m[1];
  fs::remove_all(fs::path(m[1].str()).parent_path());

  const auto cal = run_command(env + treefarm + " calibrate " + at("{dir}/tiny.toml --out {dir}/cal.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  EXPECT_TRUE(fs::exists(dir_.path() / "cal.json"));
  EXPECT_NE(cal.output.find("calibration written to"), std::string::npos) << cal.output;
  EXPECT_TRUE(entries(tmp).empty()) << "left behind: " << entries(tmp).front();
  // Progress through every phase of the calibration, on stderr.
  for (const char* phase : {"calibration: every node measures", "calibration: this host: the CPU cost of moving a byte",
                            "calibration: this host: whole tasks through a one-hop tree"})
    EXPECT_NE(cal.output.find(phase), std::string::npos) << phase << "\n" << cal.output;
}

/// Ctrl-C during `calibrate`, in the tree's measurement and in the host's: exit 130 within
/// seconds, the previous calibration file intact, no temporary directory left.
TEST_F(CliErrors, CalibrateStopsOnSigintAtEveryPhaseAndKeepsThePreviousFile) {
  const fs::path tmp = dir_.path() / "tmp";
  fs::create_directories(tmp);
  const auto out = dir_.path() / "cal.json";
  for (const char* phase : {"calibration: every node measures", "calibration: this host: whole tasks"}) {
    write_file(out, "previous\n");
    const auto log = dir_.path() / "calibrate.log";
    Child c({"/usr/bin/env", "TMPDIR=" + tmp.string(), treefarm, "calibrate", at("{dir}/tiny.toml"), "--out", out.string()}, log);
    bool seen = false;
    for (int i = 0; i < 1200 && !seen && !c.wait(0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seen = read_file(log).find(phase) != std::string::npos;
    }
    ASSERT_TRUE(seen) << phase << " never came:\n" << read_file(log);
    ::kill(c.pid(), SIGINT);
    const auto start = std::chrono::steady_clock::now();
    const auto rc = c.wait(15);
    ASSERT_TRUE(rc.has_value()) << "still running 15 s after SIGINT (" << phase << "):\n" << read_file(log);
    EXPECT_EQ(*rc, 130) << phase << "\n" << read_file(log);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 8.0) << phase;
    EXPECT_EQ(read_file(out), "previous\n") << phase;
    EXPECT_EQ(read_file(log).find("calibration written to"), std::string::npos) << phase << "\n" << read_file(log);
    EXPECT_TRUE(entries(tmp).empty()) << phase << ": left behind: " << entries(tmp).front();
  }
}

/// --timeout: exit 124, and the logs agree (no "run failed (exit code 130)", no children
/// that "did not say goodbye within 2 s" a few ms after being told to stop).
TEST_F(CliErrors, TimeoutLogsAreConsistent) {
  write_file(dir_.path() / "long.toml", test_support::star_nodes_toml(2) +
                                            "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\ntasks = 100000000\n");
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command(treefarm + " run " + at("{dir}/long.toml --timeout 2 --quiet --out {dir}/long"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_NE(r.output.find("treefarm: error: --timeout 2 s expired"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("exit code 130"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("did not say goodbye"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_.path() / "long" / "results.json"));
}

/// Command tasks: an unknown {field} in argv is named; failed tasks have their own column.
TEST_F(CliErrors, CommandTasksNameUnknownFieldsAndCountFailures) {
  write_file(dir_.path() / "cmd.toml", test_support::star_nodes_toml(1) +
                                           "[[app]]\nname = \"e\"\nkernel = \"command\"\nargv = [\"echo\", \"{inptu}\"]\n"
                                           "bytes = 10\ntasks = 3\n"
                                           "[[app]]\nname = \"f\"\nkernel = \"command\"\nargv = [\"false\"]\nbytes = 10\n"
                                           "tasks = 2\n");
  const auto r = run_command(treefarm + " run " + at("{dir}/cmd.toml --quiet --timeout 60 --out {dir}/cmd"));
  EXPECT_EQ(r.exit_code, node::exit_wrong_results) << r.output;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("cmd\\.toml:[0-9]+: field 'app\\[0\\]\\.argv\\[1\\]': '\\{inptu\\}' is not a field")))
      << r.output;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("completed +wrong +failed +throughput/s"))) << r.output;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("\nf +command +1 +2 +2 +0 +2 "))) << r.output;
  const auto j = nlohmann::json::parse(read_file(dir_.path() / "cmd" / "results.json"));
  EXPECT_EQ(j.at("apps").at(1).at("failed"), 2);
}

/// `report` on a run of a few milliseconds: bins sized to the run; a cancelled run's
/// missing tasks are "not run", not lost; this machine's cores bound a node's `cores`, said
/// on treefarm's own stderr.
TEST_F(CliErrors, ReportBinsAShortRunAndACancelledOne) {
  write_file(dir_.path() / "wide.toml", "[[node]]\nname = \"master\"\ncores = 0\n[[node]]\nname = \"w1\"\nparent = "
                                        "\"master\"\ncores = 500\n[[app]]\nname = \"noop\"\nkernel = \"noop\"\nbytes = 1e3\n"
                                        "tasks = 50\n");
  const auto r = run_command(treefarm + " run " + at("{dir}/wide.toml --quiet --timeout 60 --out {dir}/short"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("treefarm: warning: \\S*wide\\.toml:[0-9]+: node 'w1': cores = 500, but "
                                                     "this machine has [0-9]+ usable CPUs: it computes on")))
      << r.output;
  const auto results = dir_.path() / "short" / "results.json";
  auto j = nlohmann::json::parse(read_file(results));
  const double duration = j.at("duration").get<double>();
  const auto rep = run_command(treefarm + " report " + results.string());
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  const std::string gp = read_file(dir_.path() / "short" / "throughput.gp");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(gp, m, std::regex("\\(([0-9.e-]+) s bins\\)"))) << gp;
  EXPECT_LE(std::stod(m[1]), std::max(duration / 10, 1e-3)) << "a run of " << duration << " s";
  const auto data = read_file(dir_.path() / "short" / "throughput.dat");
  EXPECT_GE(std::count(data.begin(), data.end(), '\n'), 10) << data;

  j["cancelled"] = true;
  j["apps"][0]["tasks"] = 17818;
  write_file(dir_.path() / "cancelled.json", j.dump());
  const auto c = run_command(treefarm + " report " + (dir_.path() / "cancelled.json").string() + " --no-plots");
  EXPECT_NE(c.output.find("cancelled: not run 17768"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find("lost"), std::string::npos) << c.output;
}

/// `compare` of policies that need no calibration calibrates nothing; each policy's own
/// table follows its label on stdout.
TEST_F(CliErrors, CompareWithoutLpDoesNotCalibrateAndLabelsEachTable) {
  const auto r = run_stdout_only(treefarm + " compare " + at("{dir}/tiny.toml --policies fcfs,cgbc --quiet --out {dir}/cmp"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("calibrating"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no calibration (no chosen policy needs one"), std::string::npos) << r.output;
  for (const char* policy : {"fcfs", "cgbc"}) {
    const auto label = r.output.find(std::string("compare: running policy ") + policy + ":\n");
    ASSERT_NE(label, std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("application ", label), r.output.find('\n', label) + 1) << "the table follows its label:\n"
                                                                                     << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_.path() / "cmp" / "calibration.json"));
}

// ---- one exit-code table ------------------------------------------------------------

/// docs/commands.md's "Exit codes" table: (code, meaning) rows, in order.
std::vector<std::pair<int, std::string>> documented_exit_codes() {
  std::ifstream f(source_dir / "docs" / "commands.md");
  std::string line;
  bool in_section = false;
  std::vector<std::pair<int, std::string>> rows;
  static const std::regex row("^\\| ([0-9]+) \\| (.*) \\|$");
  while (std::getline(f, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Exit codes";
    std::smatch m;
    if (in_section && std::regex_match(line, m, row)) rows.emplace_back(std::stoi(m[1]), m[2]);
  }
  return rows;
}

TEST(ExitCodeTable, DocsCommandsMdSaysWhatTheCodeSays) {
  const auto rows = documented_exit_codes();
  ASSERT_EQ(rows.size(), std::size(node::exit_code_table)) << "docs/commands.md, \"Exit codes\"";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].first, node::exit_code_table[i].code) << "row " << i;
    EXPECT_EQ(rows[i].second, node::exit_code_table[i].meaning) << "code " << rows[i].first;
  }
  // The README's summary names every code.
  const std::string readme = read_file(source_dir / "README.md");
  const auto at = readme.find("Exit codes are the same for the three executables");
  ASSERT_NE(at, std::string::npos);
  const std::string summary = readme.substr(at, readme.find('.', readme.find("130", at)) - at);
  for (const auto& r : node::exit_code_table)
    EXPECT_NE(summary.find(" " + std::to_string(r.code) + " "), std::string::npos) << r.code << " in: " << summary;
}

TEST(ExitCodeTable, EveryHelpEndsWithIt) {
  // The 124 row (--timeout expired) only where a --timeout ends the command with it.
  const std::vector<std::pair<std::string, bool>> helps = {
      {treefarm + " --help", true},          {master + " --help", false},
      {worker + " --help", false},           {treefarm + " run --help", true},
      {treefarm + " launch --help", true},   {treefarm + " compare --help", true},
      {treefarm + " bench dispatch --help", false}, {treefarm + " keygen --help", false},
      {treefarm + " status --help", false}};
  for (const auto& [cmd, times_out] : helps) {
    const auto h = run_command(cmd);
    EXPECT_EQ(h.exit_code, 0) << cmd;
    for (const auto& r : node::exit_code_table) {
      char line[256];
      std::snprintf(line, sizeof line, "  %3d  %s\n", r.code, r.meaning);
      if (r.code == node::exit_timeout && !times_out)
        EXPECT_EQ(h.output.find(line), std::string::npos) << cmd << " has no --timeout that exits 124, yet lists: " << line;
      else
        EXPECT_NE(h.output.find(line), std::string::npos) << cmd << " lacks: " << line << h.output;
    }
  }
}

/// The man pages (help2man over --help at build time) carry the same rows.
TEST(ExitCodeTable, ManPagesCarryIt) {
  for (const char* prog : {"treefarm", "treefarm-master", "treefarm-worker"}) {
    const fs::path page = fs::path(bin_dir).parent_path() / "packaging" / "man" / (std::string(prog) + ".1.gz");
    if (!fs::exists(page)) GTEST_SKIP() << page << " not built (help2man missing: apt-get install help2man)";
    auto r = run_command("zcat " + page.string());
    ASSERT_EQ(r.exit_code, 0);
    // roff: "\-" is "-"; help2man sets options in bold ("\fB...\fR").
    const std::string text = std::regex_replace(std::regex_replace(r.output, std::regex("\\\\f[BRI]"), ""),
                                                std::regex("\\\\-"), "-");
    ASSERT_NE(text.find(".SS \"Exit codes:\""), std::string::npos) << prog;
    for (const auto& row : node::exit_code_table) {
      const bool listed = text.find(std::to_string(row.code) + "\n" + row.meaning) != std::string::npos;
      if (row.code == node::exit_timeout && std::string(prog) != "treefarm")  // no --timeout there
        EXPECT_FALSE(listed) << prog << ".1 lists " << row.code;
      else
        EXPECT_TRUE(listed) << prog << ".1 lacks " << row.code << " " << row.meaning;
    }
  }
}

/// Every examples/ file a --help cites exists.
TEST(Cli, HelpCitesOnlyExamplesThatExist) {
  std::vector<std::string> commands = {treefarm, master, worker};
  const auto top = run_command(treefarm + " --help").output;
  std::istringstream lines(top.substr(top.find("Subcommands:")));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex("^  ([a-z0-9-]+) ")) ) commands.push_back(treefarm + " " + m[1].str());
  }
  ASSERT_GT(commands.size(), 15u) << top;
  std::set<std::string> cited;
  for (const auto& c : commands) {
    const auto h = run_command(c + " --help").output;
    static const std::regex example("examples/[A-Za-z0-9_./-]*[A-Za-z0-9_]");
    for (auto it = std::sregex_iterator(h.begin(), h.end(), example); it != std::sregex_iterator(); ++it)
      cited.insert(it->str());
  }
  EXPECT_TRUE(cited.count("examples/served.toml")) << "submit --help cites it";
  for (const auto& file : cited) EXPECT_TRUE(fs::exists(source_dir / file)) << file << " is cited by a --help";
}

}  // namespace
}  // namespace treefarm::testing
