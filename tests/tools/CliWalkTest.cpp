// Every subcommand and option of the three executables, walked with a bad value: each
// refusal in the one error format ("PROGRAM: error: ...") naming the bad word, with an exit
// code of the table (runtime/node/ExitCode.hpp), no abort, nothing left in TMPDIR. The
// subcommands and options are read from --help, so a new one is walked too, and a
// subcommand without a row in the table below fails the test.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "runtime/node/ExitCode.hpp"
#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::testing {
namespace {

/// One value option as --help lists it: its long name and CLI11's type word.
struct HelpOption {
  std::string name;  ///< "--buffer"
  std::string type;  ///< "UINT", "FLOAT:SECONDS>0", "TEXT:FILE", "TEXT:{off,pull,push}", ...
};

/// The "Subcommands:" and the value options of a --help text.
void read_help(const std::string& help, std::vector<std::string>& subcommands, std::vector<HelpOption>& options) {
  std::istringstream lines(help);
  std::string section;
  static const std::regex entry("^  (\\S+)(?: (\\S+))?");
  static const std::regex value_type("^(TEXT|UINT|INT|FLOAT)");
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != ' ') section = line;
    std::smatch m;
    if (!std::regex_search(line, m, entry)) continue;
    if (section == "Subcommands:") subcommands.push_back(m[1]);
    if (section != "Options:" || !m[2].matched || !std::regex_search(m[2].str(), value_type)) continue;
    const std::string names = m[1];
    const auto comma = names.rfind(',');
    options.push_back({comma == std::string::npos ? names : names.substr(comma + 1), m[2]});
  }
}

/// How a subcommand is walked: the arguments that make its command line good apart from
/// the bad option (`{dir}`: the test's folder), and a bad value for each option that takes
/// free text (a type other than a number, a set, a file, a policy or a log level).
struct Row {
  std::string base;
  std::map<std::string, std::string> text;  ///< option -> bad value ("" = not walked: a note says why)
};

/// The bad value of an option from its type, "" when the row must give one.
std::string bad_value_of(const HelpOption& o) {
  const auto& t = o.type;
  if (t.rfind("UINT", 0) == 0 || t.rfind("INT", 0) == 0 || t.rfind("FLOAT", 0) == 0) return "-3";
  if (t.rfind("TEXT:{", 0) == 0 || t.find("POLICY") != std::string::npos || t.find("LEVEL") != std::string::npos)
    return "nosuch";
  if (t.find("FILE") != std::string::npos || t.find("DIR") != std::string::npos) return "/nonexistent/treefarm-walk";
  return "";
}

const std::string out_no = "/proc/treefarm-walk/out";  ///< an output path that cannot be made

/// Every subcommand of `treefarm` (the programs' own options: the empty name).
const std::map<std::string, Row>& rows() {
  static const std::map<std::string, Row> table = {
      {"run", {"{dir}/tiny.toml --quiet", {{"--each-line", "/nonexistent/treefarm-walk"}, {"--array", "1-x"},
                                           {"--output-file", "{stem}.gz"}, {"--name", "x"}, {"--out", out_no},
                                           {"--spot-check", "2"}, {"--inputs", "/nonexistent/treefarm-walk/*.txt"},
                                           {"--dashboard", "nosuch:1"}, {"--dashboard-file", out_no}}}},
      {"resubmit", {"{dir}/r --failed", {}}},
      {"launch", {"{dir}/tiny.toml --hosts {dir}/hosts.toml --out {dir}/lo", {{"--out", ""},  // needs ssh to start
                                                                                {"--bin-dir", ""}, {"--work-dir", ""},  // --slurm only
                                                                                {"--ssh", "/nonexistent/treefarm-walk"}}}},
      {"report", {"{dir}/r/results.json", {{"--out", out_no}, {"--html", out_no}}}},
      {"keygen", {"a", {{"--out", out_no}}}},
      {"calibrate", {"{dir}/tiny.toml", {{"--out", out_no}, {"--to", "nosuch"}}}},
      {"predict", {"{dir}/fast.toml", {{"--objective", "nosuch"}}}},
      {"compare", {"{dir}/tiny.toml --no-calibrate --quiet", {{"--policies", "nosuch"}, {"--out", out_no}, {"--to", "nosuch"}}}},
      {"submit", {"{dir}/tiny.toml --to tcp://127.0.0.1:1 --timeout 1",
                  {{"--each-line", "/nonexistent/treefarm-walk"}, {"--array", "1-x"}, {"--inputs", "/nonexistent/treefarm-walk/*"},
                   {"--output-file", "{stem}.gz"}, {"--name", "x"}, {"--to", "nosuch"}, {"--out", out_no},
                   {"--policy", "nosuch"}}}},
      {"status", {"--to tcp://127.0.0.1:1", {{"--to", "nosuch"}}}},
      {"cancel", {"1 --to tcp://127.0.0.1:1", {{"--to", "nosuch"}}}},
      {"sweep", {"{dir}/mm.toml --app mm --n 8 --quiet", {{"--app", "nosuch"}, {"--out", out_no}}}},
      {"simulate", {"{dir}/fast.toml --quiet", {{"--out", out_no}, {"--trace", out_no}}}},
      {"gen-platform", {"--nodes 3", {}}},
      {"emulate", {"{dir}/tiny.toml run", {{"--out", out_no}, {"--policies", "nosuch"}, {"--calibration-out", out_no},
                                            {"--prefix", "nosuch"}, {"--fault", "nosuch"}}}},
      {"plan", {"{dir}/m.toml --apps {dir}/apps.toml --max-seconds 5", {{"--qos", "nosuch"}, {"--out", out_no}}}},
      {"gen-machines", {"--machines 3 --lans 1 --seed 1", {{"--cores", "nosuch"}, {"--speed", "nosuch"}, {"--lan-bandwidth", "nosuch"},
                                                  {"--inter-bandwidth", "nosuch"}, {"--out", out_no}}}},
      {"probe", {"--workers tcp://127.0.0.1:1,tcp://127.0.0.1:2", {{"--workers", "nosuch"}, {"--tree", "nosuch"}, {"--out", out_no},
                                                 {"--lan", ""},  // any name
                                                                                 {"--keys", "/nonexistent/treefarm-walk"}}}},
      {"hwdetect", {"", {}}},
      {"bench", {"", {}}},
  };
  return table;
}

class CliWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string star = test_support::star_nodes_toml(1);
    write_file(dir_.path() / "tiny.toml", star + "[[app]]\nname = \"noop\"\nkernel = \"noop\"\nbytes = 1e3\ntasks = 20\n");
    write_file(dir_.path() / "fast.toml",
               "[[node]]\nname = \"master\"\ncores = 0\n[[node]]\nname = \"w1\"\nparent = \"master\"\ncores = 1\n"
               "speed = \"1Gf\"\nbandwidth = \"1Gbps\"\n[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 16\ntasks = 20\n");
    write_file(dir_.path() / "mm.toml", star + "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 16\ntasks = 4\n");
    write_file(dir_.path() / "apps.toml", "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\ntasks = 100\n");
    write_file(dir_.path() / "hosts.toml", "[[host]]\nname = \"h1\"\naddress = \"127.0.0.1\"\n");
    ASSERT_EQ(run_command(bin_dir + "/treefarm gen-machines --machines 3 --lans 1 --seed 1 --out " +
                          (dir_.path() / "m.toml").string()).exit_code, 0);
    const auto r = run_command(bin_dir + "/treefarm run " + at("{dir}/tiny.toml --quiet --out {dir}/r"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fs::create_directories(tmp_);
  }
  std::string at(std::string text) const {
    for (std::size_t p; (p = text.find("{dir}")) != std::string::npos;) text.replace(p, 5, dir_.path().string());
    return text;
  }

  /// Runs `program words... option value` and checks the refusal.
  void walk(const std::string& program, const std::string& words, const std::string& option, const std::string& value) {
    const std::string shown = program + (words.empty() ? "" : " " + words) + " " + option + " '" + value + "'";
    const std::string cmd = "cd " + dir_.path().string() + " && TMPDIR=" + tmp_.string() + " timeout -s KILL 60 " + bin_dir +
                            "/" + program + (words.empty() ? "" : " " + at(words)) + " " + option + " '" + value + "' </dev/null";
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_command(cmd);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++walked_;
    const std::set<int> refused = {node::exit_error, node::exit_usage, node::exit_bad_input};
    EXPECT_TRUE(refused.count(r.exit_code)) << shown << ": exit " << r.exit_code << "\n" << r.output;
    EXPECT_NE(r.output.find(program + ": error: "), std::string::npos) << shown << ": not the one error format\n" << r.output;
    // The option, its value, or (an output that cannot be made) the value's folder.
    const std::string folder = fs::path(value).parent_path().string();
    EXPECT_TRUE(r.output.find(option) != std::string::npos || r.output.find(value) != std::string::npos ||
                (folder.size() > 1 && r.output.find(folder) != std::string::npos))
        << shown << ": the bad word is not named\n" << r.output;
    for (const char* crash : {"terminate called", "Aborted", "what():", "Segmentation", "[error]", "[critical]"})
      EXPECT_EQ(r.output.find(crash), std::string::npos) << shown << ": " << crash << "\n" << r.output;
    EXPECT_LT(took, 20.0) << shown << " took " << took << " s";
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(tmp_)) left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << shown << " left " << left.front() << " in TMPDIR";
    for (const auto& e : fs::directory_iterator(tmp_)) fs::remove_all(e.path());
  }

  /// Walks every value option of `program words` (and, for a program made of subcommands,
  /// every subcommand under it).
  void walk_all(const std::string& program, const std::string& words, const Row& row) {
    std::vector<std::string> subs;
    std::vector<HelpOption> options;
    read_help(run_command(bin_dir + "/" + program + (words.empty() ? "" : " " + words) + " --help").output, subs, options);
    for (const auto& o : options) {
      if (o.name == "--help" || o.name == "--version") continue;
      std::string value = bad_value_of(o);
      if (const auto it = row.text.find(o.name); it != row.text.end()) {
        if (it->second.empty()) continue;  // not walked: the row's note says why
        value = it->second;
      }
      if (value.empty()) {
        ADD_FAILURE() << program << " " << words << " " << o.name << " (" << o.type
                      << "): no bad value for this option: give one in the row";
        continue;
      }
      walk(program, (words + " " + row.base).substr(words.empty() ? 1 : 0), o.name, value);
    }
  }

  TempDir dir_{"cli-walk"};
  fs::path tmp_ = dir_.path() / "tmp";
  int walked_ = 0;
};

TEST_F(CliWalk, EverySubcommandOfTreefarmRefusesEveryBadValue) {
  std::vector<std::string> subs;
  std::vector<HelpOption> top;
  read_help(run_command(bin_dir + "/treefarm --help").output, subs, top);
  ASSERT_GT(subs.size(), 15u);
  for (const auto& sub : subs) {
    const auto row = rows().find(sub);
    if (row == rows().end()) {
      ADD_FAILURE() << "treefarm " << sub << " has no row in CliWalkTest.cpp's table: walk it";
      continue;
    }
    if (sub == "bench") {
      // Each benchmark: its options only (they run nothing before their values are good).
      std::vector<std::string> benches;
      std::vector<HelpOption> none;
      read_help(run_command(bin_dir + "/treefarm bench --help").output, benches, none);
      ASSERT_GT(benches.size(), 5u);
      const std::map<std::string, std::string> bench_text = {{"--out", out_no}, {"--kernel", "nosuch"}};
      for (const auto& b : benches) walk_all("treefarm", "bench " + b, Row{"", bench_text});
      continue;
    }
    walk_all("treefarm", sub, row->second);
  }
  EXPECT_GT(walked_, 100);
}

TEST_F(CliWalk, MasterAndWorkerRefuseEveryBadValue) {
  // Every option is checked before anything listens or waits: an output path that cannot
  // be written (exit 1), an endpoint that is not one, an option of a served master without
  // --serve (exit 2). Not walked: --name takes any word (the worker's; the master's is a
  // --serve option, walked as such); --reparent-gain may be negative (documented: move
  // every time).
  walk_all("treefarm-master", "", Row{"{dir}/tiny.toml --out {dir}/m",
                                      {{"--out", out_no}, {"--cpus", "nosuch"}, {"--inputs", "nosuch"},
                                       {"--calibration", "/nonexistent/treefarm-walk"}, {"--dashboard", "nosuch:1"},
                                       {"--dashboard-file", out_no}, {"--name", "m"}, {"--bind", "tcp://127.0.0.1:*"},
                                       {"--bind-file", "{dir}/b.ep"}, {"--state-dir", "{dir}/state"},
                                       {"--calibrate-out", out_no}, {"--origin", "nosuch"}, {"--listen", "nosuch"},
                                       {"--ready-file", out_no}}});
  // The served master's own options, each bad (the experiment file: none with --serve).
  for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
           {"--bind", "nosuch"}, {"--bind-file", out_no}, {"--state-dir", out_no}, {"--listen", "nosuch"},
           {"--ready-file", out_no}})
    walk("treefarm-master", "--serve", option, value);
  walk_all("treefarm-worker", "", Row{"tcp://127.0.0.1:1 --rejoin-timeout 1",
                                      {{"--parent", "nosuch"}, {"--cpus", "nosuch"}, {"--name", ""}, {"--reparent-gain", ""},
                                       {"--join", "nosuch"}, {"--advertise", "nosuch"}, {"--listen", "nosuch"},
                                       {"--ready-file", out_no}, {"--run-as", "nosuch-user"}}});
  // --join with the --parent auto it belongs to.
  walk("treefarm-worker", "--parent auto", "--join", "nosuch");
  EXPECT_GT(walked_, 20);
}

}  // namespace
}  // namespace treefarm::testing
