// Everyday use: the three executables as a user runs them — one exit-code table,
// --version, options refused at start, a worker at a closed port, keygen, bench --json,
// a failed run that writes no results.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/zmq/Curve.hpp"
#include "tests/support/TreeToml.hpp"
#include "tests/integration/ProcessTestUtil.hpp"

namespace treefarm::testing {
namespace {

const std::string treefarm = bin_dir + "/treefarm";
const std::string treefarm_lab = bin_dir + "/treefarm-lab";
const std::string master = bin_dir + "/treefarm-master";
const std::string worker = bin_dir + "/treefarm-worker";

const std::string tiny = test_support::star_nodes_toml(1) +
                         "[[app]]\nname = \"noop\"\nkernel = \"noop\"\nbytes = 1e3\ntasks = 50\n";

/// stdout only (stderr to a file), for output that must be machine-readable.
CommandResult run_stdout(const std::string& cmd, const fs::path& err) {
  CommandResult r;
  std::FILE* p = popen((cmd + " 2>" + err.string()).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// A TCP port on loopback that nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(Cli, VersionAndExitCodeTableOnAllThree) {
  for (const auto& [bin, name] : {std::pair{treefarm, "treefarm"}, std::pair{master, "treefarm-master"},
                                  std::pair{worker, "treefarm-worker"}}) {
    const auto v = run_command(bin + " --version");
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_TRUE(std::regex_search(v.output, std::regex(std::string("^") + name + " [0-9]+\\.[0-9]+\\.[0-9]+\n")))
        << v.output;
    const auto h = run_command(bin + " --help");
    EXPECT_EQ(h.exit_code, 0) << h.output;
    for (const char* row : {"Exit codes:", "  2  usage error", "  3  bad input file", "  4  wrong results", "130  interrupted"})
      EXPECT_NE(h.output.find(row), std::string::npos) << name << " --help lacks '" << row << "':\n" << h.output;
    // 124 only where a --timeout can end the program (treefarm-master and -worker have none).
    EXPECT_EQ(h.output.find("124  --timeout expired") != std::string::npos, std::string(name) == "treefarm") << name << ":\n" << h.output;
    // CLI11's own codes (105-109) do not leak: every parse error is 2.
    const auto bad = run_command(bin + " --no-such-option");
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("--help"), std::string::npos) << bad.output;
  }
  EXPECT_EQ(run_command(treefarm).exit_code, 2);                   // no subcommand
  EXPECT_EQ(run_command(treefarm + " run").exit_code, 2);          // missing experiment
  EXPECT_EQ(run_command(treefarm + " run /no/such.toml").exit_code, 2);
  const auto sub = run_command(treefarm + " run --help");
  EXPECT_NE(sub.output.find("Exit codes:"), std::string::npos) << sub.output;
}

TEST(Cli, BadValuesAreRefusedAtStart) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "tiny.toml", tiny);
  for (const std::string& cmd :
       {treefarm + " run " + exp + " --log-level verbose", master + " " + exp + " --log-level verbose",
        worker + " tcp://127.0.0.1:1 --log-level verbose"}) {
    const auto r = run_command(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("verbose"), std::string::npos) << r.output;
  }
  for (const char* opt : {" --buffer 0", " --timeout -5", " --heartbeat-timeout 0"}) {
    const auto r = run_command(treefarm + " run " + exp + opt);
    EXPECT_EQ(r.exit_code, 2) << opt << "\n" << r.output;
  }
  EXPECT_EQ(run_command(master + " " + exp + " --buffer 0").exit_code, 2);
  EXPECT_EQ(run_command(worker + " tcp://127.0.0.1:1 --join-timeout -1").exit_code, 2);
}

// `--one-port-window BYTES` on run, treefarm-master, treefarm-worker and predict:
// a negative, non-numeric or too large value is a usage error; a run passes it to the
// master, which records it in results.json's settings.
TEST(Cli, OnePortWindowIsCheckedAndReachesTheMaster) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "tiny.toml", tiny);
  for (const char* bad : {" --one-port-window -1", " --one-port-window 64KiB", " --one-port-window 2147483648"}) {
    for (const std::string& cmd : {treefarm + " run " + exp + bad, master + " " + exp + bad,
                                   worker + " tcp://127.0.0.1:1" + bad, treefarm + " predict " + exp + bad}) {
      const auto r = run_command(cmd);
      EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
      EXPECT_NE(r.output.find("--one-port-window"), std::string::npos) << cmd << "\n" << r.output;
    }
  }
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm + " run " + exp + " --one-port-window 0 --quiet --timeout 60 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(read_file(out / "results.json")).at("settings").at("one_port_window"), 0);
}

// `compare --repeat 0`, and `treefarm-lab campaign price --set` with an unknown key or a value that is
// not a number, are usage errors (exit 2) naming what was wrong, before anything runs.
TEST(Cli, CompareRepeatAndPriceSetAreChecked) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "tiny.toml", tiny);
  const auto r0 = run_command(treefarm + " compare " + exp + " --repeat 0 --out " + (dir.path() / "c").string());
  EXPECT_EQ(r0.exit_code, 2) << r0.output;
  EXPECT_NE(r0.output.find("--repeat"), std::string::npos) << r0.output;
  for (const std::string set : {"bogus=1", "relative_gain=abc", "relative_gain"}) {
    const auto r = run_command(treefarm_lab + " campaign price --trees 1 --set " + set + " --out " + (dir.path() / "p").string());
    EXPECT_EQ(r.exit_code, 2) << set << "\n" << r.output;
    EXPECT_NE(r.output.find(set.substr(0, set.find('='))), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "p" / "price-campaign.csv")) << "no tree ran";
}

TEST(Cli, BadExperimentIsExitCode3NamingFileLineField) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "bad.toml", tiny + "cores_per_task = \"two\"\n");
  const auto r = run_command(treefarm + " predict " + exp);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("bad.toml:13: field 'app[0].cores_per_task'"), std::string::npos) << r.output;
}

TEST(Cli, InputsAboveTheFrameLimitAreRefusedAtStart) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "big.toml",
                              "[[node]]\nname = \"master\"\ncores = 0\n[[node]]\nname = \"w1\"\nparent = \"master\"\n"
                              "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 16384\ntasks = 2\n");
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command(treefarm + " run " + exp + " --out " + (dir.path() / "out").string());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("big.toml:7: field 'app[0].n'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("frame limit"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "results.json"));
}

TEST(Cli, WorkerAtAClosedPortSaysWhatItTriedAndForHowLong) {
  const std::string ep = "tcp://127.0.0.1:" + std::to_string(closed_port());
  // Positional parent address, as `dask worker tcp://host:8786`.
  const auto r = run_command(worker + " " + ep + " --join-timeout 1 --rejoin-timeout 0 --cores 0");
  EXPECT_EQ(r.exit_code, 5) << r.output;  // exit_parent_lost
  EXPECT_NE(r.output.find(ep), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tried for"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no Welcome within 1 s"), std::string::npos) << r.output;  // not "1.000000 s"
}

TEST(Cli, AnInterruptedMasterWritesNoResultsAndExits130) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "tiny.toml", tiny);
  const auto ready = dir.path() / "ready";
  Child m({master, exp, "--out", (dir.path() / "out").string(), "--ready-file", ready.string(), "--wait-timeout",
           "60"},
          dir.path() / "master.log");
  for (int i = 0; i < 200 && !fs::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(fs::exists(ready)) << read_file(dir.path() / "master.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(m.pid(), SIGINT);
  const auto rc = m.wait(10);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 130) << read_file(dir.path() / "master.log");
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "results.json"));
  EXPECT_EQ(read_file(dir.path() / "master.log").find("throughput/s"), std::string::npos);  // no table of zeros
}

// `treefarm-lab campaign paper` on SIGTERM starts no more simulations, ends the
// running one, writes the report of those that finished (saying so) and exits 143.
TEST(Cli, AnInterruptedPaperCampaignWritesWhatFinishedAndExits143) {
  TempDir dir("cli");
  const auto out = dir.path() / "campaign";
  const auto log = dir.path() / "campaign.log";
  Child c({treefarm_lab, "campaign", "paper", "--jobs", "1", "--out", out.string()}, log);
  // The whole campaign (the --quick subset can finish within a second): the platforms are
  // made, then 1650 simulations run one at a time; the first progress line
  // ("[N/1650 simulations]") comes after 10 s: then at least one has finished.
  bool progress = false;
  for (int i = 0; i < 1200 && !progress; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    progress = read_file(log).find(" simulations] ") != std::string::npos;
    if (c.wait(0)) break;
  }
  ASSERT_TRUE(progress) << read_file(log);
  ::kill(c.pid(), SIGTERM);
  const auto rc = c.wait(60);
  ASSERT_TRUE(rc.has_value()) << "still running 60 s after SIGTERM: " << read_file(log);
  EXPECT_EQ(*rc, 143) << read_file(log);
  const auto text = read_file(log);
  EXPECT_NE(text.find("interrupted after "), std::string::npos) << text;
  std::ifstream f(out / "campaign.json");
  ASSERT_TRUE(f) << "no campaign.json: " << text;
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j.contains("interrupted")) << j.dump();
  EXPECT_GE(j.at("simulations").get<std::size_t>(), 1u);
  EXPECT_LT(j.at("simulations").get<std::size_t>(), 1650u);
  EXPECT_EQ(j.at("incomplete").get<std::size_t>(), 0u) << "the simulation ended by the signal is no failure";
  EXPECT_NE(read_file(out / "paper-campaign.md").find("Incomplete campaign"), std::string::npos);
}

TEST(Cli, KeygenRefusesAPathNameAndKeepsExistingKeys) {
  TempDir dir("cli");
  const auto keys = (dir.path() / "keys").string();
  const auto slash = run_command(treefarm + " keygen a/b --out " + keys);
  EXPECT_EQ(slash.exit_code, 2) << slash.output;
  EXPECT_NE(slash.output.find("--out"), std::string::npos) << slash.output;
  EXPECT_FALSE(fs::exists(dir.path() / "keys" / "a"));
  ASSERT_EQ(run_command(treefarm + " keygen w1 w2 --out " + keys).exit_code, 0);
  const auto secret = read_file(dir.path() / "keys" / "w1.key_secret");
  EXPECT_EQ(fs::status(dir.path() / "keys" / "w1.key_secret").permissions() & (fs::perms::group_all | fs::perms::others_all),
            fs::perms::none);
  const auto again = run_command(treefarm + " keygen w1 --out " + keys);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.output.find("--force"), std::string::npos) << again.output;
  EXPECT_EQ(read_file(dir.path() / "keys" / "w1.key_secret"), secret);
  ASSERT_EQ(run_command(treefarm + " keygen w1 --force --out " + keys).exit_code, 0);
  EXPECT_NE(read_file(dir.path() / "keys" / "w1.key_secret"), secret);
  // The replaced public key left authorized_keys: one line per name.
  const auto authorized = read_file(dir.path() / "keys" / "authorized_keys");
  EXPECT_EQ(std::count(authorized.begin(), authorized.end(), '\n'), 2) << authorized;
  // Roles (docs/security.md): a client line says so; the master's key is not listed.
  ASSERT_EQ(run_command(treefarm + " keygen alice --role client --out " + keys).exit_code, 0);
  ASSERT_EQ(run_command(treefarm + " keygen m --role master --out " + keys).exit_code, 0);
  const auto with_roles = read_file(dir.path() / "keys" / "authorized_keys");
  const auto alice = treefarm::net::load_public_key_file((dir.path() / "keys" / "alice.key").string());
  EXPECT_NE(with_roles.find("alice " + alice + " client\n"), std::string::npos) << with_roles;
  EXPECT_EQ(with_roles.find(treefarm::net::load_public_key_file((dir.path() / "keys" / "m.key").string())), std::string::npos)
      << with_roles;
  EXPECT_TRUE(fs::exists(dir.path() / "keys" / "m.key_secret"));
  EXPECT_EQ(run_command(treefarm + " keygen x --role root --out " + keys).exit_code, 2);
}

TEST(Cli, RunRecordsAReproducibleResultsJsonAndReportDrawsIt) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "tiny.toml", tiny);
  const auto out = dir.path() / "out";
  const auto r = run_stdout(treefarm + " run " + exp + " --out " + out.string() + " --json-progress --timeout 60",
                            dir.path() / "err");
  ASSERT_EQ(r.exit_code, 0) << r.output << read_file(dir.path() / "err");
  // stdout: JSON lines only, the last one the results.
  std::istringstream lines(r.output);
  std::string line, last;
  while (std::getline(lines, line)) {
    nlohmann::json parsed;
    ASSERT_NO_THROW(parsed = nlohmann::json::parse(line)) << "not JSON: " << line << "\nstdout:\n" << r.output;
    last = line;
  }
  const auto summary = nlohmann::json::parse(last);
  EXPECT_EQ(summary.at("type"), "results");
  EXPECT_TRUE(summary.at("ok").get<bool>());
  const auto j = nlohmann::json::parse(read_file(out / "results.json"));
  EXPECT_EQ(j.at("format_version"), 2);
  EXPECT_EQ(j.at("experiment_text"), tiny);
  EXPECT_FALSE(j.at("started_utc").get<std::string>().empty());
  EXPECT_FALSE(j.at("treefarm_version").get<std::string>().empty());
  EXPECT_TRUE(j.at("host").contains("hostname"));
  EXPECT_EQ(j.at("settings").at("buffer"), 10);
  ASSERT_EQ(j.at("tasks").size(), 50u);
  for (const auto& t : j.at("tasks")) {
    const double dispatched = t.at("dispatched_at").get<double>(), started = t.at("started_at").get<double>(),
                 completed = t.at("completed_at").get<double>();
    EXPECT_GE(dispatched, 0.0);
    EXPECT_LE(dispatched, started + 1e-3);  // started_at leaves out only the way back up
    EXPECT_LE(started, completed);
  }
  const auto rep = run_command(treefarm + " report " + (out / "results.json").string());
  EXPECT_EQ(rep.exit_code, 0) << rep.output;
  EXPECT_NE(rep.output.find("throughput/s"), std::string::npos) << rep.output;
  if (rep.output.find("gnuplot not found") == std::string::npos) {
    EXPECT_GT(fs::file_size(out / "gantt.png"), 1000u) << rep.output;
    EXPECT_GT(fs::file_size(out / "throughput.png"), 1000u) << rep.output;
  }
  const auto bad = run_command(treefarm + " report " + exp);
  EXPECT_EQ(bad.exit_code, 3) << bad.output;
}

/// Runs `treefarm ARGS` (a benchmark with --json): its stdout parsed, or nullopt with the
/// failure (exit code, stderr, or stdout that is not JSON) reported.
std::optional<nlohmann::json> bench_json(const std::string& args) {
  TempDir dir("cli");
  const auto r = run_stdout(treefarm + " " + args, dir.path() / "err");
  if (r.exit_code != 0) {
    ADD_FAILURE() << args << ": exit code " << r.exit_code << "\n" << r.output << read_file(dir.path() / "err");
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(r.output);
  } catch (const nlohmann::json::exception&) {
    ADD_FAILURE() << args << ": stdout is not JSON:\n" << r.output;
    return std::nullopt;
  }
}

TEST(Cli, BenchDispatchJsonPrintsOnlyJson) {
  const auto j = bench_json("bench dispatch --tasks 2000 --json");
  ASSERT_TRUE(j);
  EXPECT_GT(j->at("dispatch_tasks_per_s").get<double>(), 0);
}

// through a 0-core forwarder under one-port, every task arrives exactly once
// (the run's exit code) with small transfers pipelined (NodeOptions::one_port_window).
TEST(Cli, BenchDispatchDepthTwoOnePortCompletes) {
  const auto j = bench_json("bench dispatch --tasks 5000 --buffer 500 --depth 2 --comm-model one-port --json");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->at("depth").get<int>(), 2);
  EXPECT_GT(j->at("dispatch_tasks_per_s").get<double>(), 0);
  EXPECT_EQ(run_command(treefarm + " bench dispatch --depth 3").exit_code, 2) << "--depth 3 was accepted";
}

// the master keeps per-task records on disk, not in memory. 200,000 tasks computed
// by the master itself (fast under load); before the task log it grew ~1.3 KB per task.
TEST(Cli, BenchMemoryMasterStaysUnder100BytesPerTask) {
  const auto parsed = bench_json("bench memory --tasks 200000 --workers 0 --dom-tasks 2000 --json");
  ASSERT_TRUE(parsed);
  const nlohmann::json& j = *parsed;
  EXPECT_EQ(j.at("run").at("tasks").get<std::uint64_t>(), 200000u);  // every task recorded
  EXPECT_EQ(j.at("reference").at("tasks").get<std::uint64_t>(), 1u);
  EXPECT_GT(j.at("run").at("peak_rss_bytes").get<std::uint64_t>(), j.at("run").at("rss_at_start_bytes").get<std::uint64_t>());
  EXPECT_LE(j.at("bytes_per_task").get<double>(), 100.0) << j.dump(1);
  EXPECT_GT(j.at("results_json").at("dom_seconds").get<double>(), 0);
}

// An `inputs` file larger than one frame (2 GiB − 64 KiB; a sparse file here) is refused
// before anything runs, naming the file: by `run`, and by `submit` on the submitter's side
// (it used to send the experiment without its files, and the served master answered that
// the glob matched nothing). No master listens at the submit endpoint: the refusal must
// come before any exchange.
TEST(Cli, AnInputOverTheFrameLimitIsRefusedNamingTheFileByRunAndSubmit) {
  TempDir dir("cli");
  fs::create_directories(dir.path() / "data");
  write_file(dir.path() / "data" / "small.txt", "hi\n");
  {
    std::ofstream(dir.path() / "data" / "huge.bin");
  }
  fs::resize_file(dir.path() / "data" / "huge.bin", std::uint64_t{2200} * 1000 * 1000);
  const auto exp = write_file(dir.path() / "bag.toml", "[[app]]\nname = \"sizes\"\nkind = \"command\"\n"
                                                        "argv = [\"wc\", \"-c\", \"{input}\"]\ninputs = \"data/*\"\n");
  for (const std::string& cmd : {treefarm + " run " + exp + " --out " + (dir.path() / "out").string(),
                                treefarm + " submit " + exp + " --to tcp://127.0.0.1:9 --out " + (dir.path() / "sub").string()}) {
    const auto r = run_command("timeout 60 " + cmd);
    EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("huge.bin' has 2200000000 bytes"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("one frame"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "journal.tsv")) << "nothing ran";
}

// The --out of a `treefarm submit` to a served tree holds results.json but no journal (the
// master keeps it in its job folder): resubmit refuses it saying so, instead of running
// anything. The folder is laid out as a submission leaves it.
TEST(Cli, ResubmitRefusesTheResultsOfAServedTreeNamingWhy) {
  TempDir dir("cli");
  const auto exp = write_file(dir.path() / "bag.toml", "[[app]]\nname = \"p\"\nkind = \"command\"\nargv = [\"true\"]\narray = \"1-3\"\n");
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  write_file(out / "results.json",
             nlohmann::json{{"settings", {{"experiment_file", exp}}},
                            {"failures", nlohmann::json::array({{{"app", "p"}, {"id", 1}, {"input", "2"}}})}}
                 .dump());
  const auto r = run_command(treefarm + " resubmit " + out.string() + " --failed --quiet --timeout 60");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("journal.tsv"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("served tree"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "journal.tsv")) << "nothing ran";
}

// `bench memory --array`: a command bag `array = "1-N"` of `true` through a worker, every
// task recorded, and the peak it prints beside the 200 MB target is the master's own
// figure. The size that matters (1,000,000 tasks) runs for an hour: docs/benchmarks.md.
TEST(Cli, BenchMemoryArrayRecordsEveryTaskAndPrintsThePeakBesideTheTarget) {
  const auto parsed = bench_json("bench memory --array --tasks 300 --workers 1 --buffer 64 --timeout 300 --json");
  ASSERT_TRUE(parsed);
  const nlohmann::json& j = *parsed;
  EXPECT_EQ(j.at("kind"), "array");
  EXPECT_EQ(j.at("run").at("tasks").get<std::uint64_t>(), 300u);  // every task recorded
  const auto peak = j.at("run").at("peak_rss_bytes").get<std::uint64_t>();
  EXPECT_GT(peak, j.at("run").at("rss_at_start_bytes").get<std::uint64_t>());
  EXPECT_DOUBLE_EQ(j.at("peak_mb").get<double>(), static_cast<double>(peak) / 1e6);
  EXPECT_DOUBLE_EQ(j.at("limit_mb").get<double>(), 200.0);
  EXPECT_EQ(j.at("within_limit").get<bool>(), peak <= 200'000'000u);
  EXPECT_FALSE(j.contains("results_json"));  // the no-op records' comparison is not run
}

}  // namespace
}  // namespace treefarm::testing
