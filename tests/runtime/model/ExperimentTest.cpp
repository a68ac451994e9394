#include "runtime/model/Experiment.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

#include "tests/support/TempDir.hpp"

namespace treefarm::model {
namespace {

// Nodes deliberately out of order: a child (w2) before its parent (w1), and the master
// last, so the breadth-first reordering has something to do.
constexpr const char* good = R"(# a good experiment
[[node]]
name = "w2"
parent = "w1"
cores = 2
speed = "2Gf"
bandwidth = "1Gbps"
latency = "50us"
cpu_quota = 0.5
cpuset = "0-1"

[[node]]
name = "w1"
parent = "master"
cores = 0
bandwidth = 125e6

[[node]]
name = "w3"
parent = "master"
listen = "tcp://127.0.0.1:5555"
speed = 1e9

[[node]]
name = "master"

[[app]]
name = "mm"
kernel = "matmul"
n = 512
tasks = 100
weight = 2

[[app]]
name = "add"
kernel = "matadd"
n = 1024
tasks = 200
memory_per_task = "512MiB"
cores_per_task = 2

[[app]]
name = "ping"
kernel = "noop"
bytes = "4KiB"
tasks = 10

[[app]]
name = "sim"
bytes = 1000
flops = "2Gf"
tasks = 5

[run]
buffer = 4
policy = "cgbc"
epsilon = 0.2
seed = 7
comm_model = "multi-port"
max_out_bandwidth = "1GiBps"
)";

TEST(Experiment, GoodFileIsReorderedBreadthFirstWithDefaults) {
  const Experiment e = parse_experiment(good, "good.toml");
  ASSERT_EQ(e.nodes.size(), 4u);
  EXPECT_EQ(e.nodes[0].name, "master");
  EXPECT_EQ(e.nodes[1].name, "w1");  // siblings keep file order: w1 before w3
  EXPECT_EQ(e.nodes[2].name, "w3");
  EXPECT_EQ(e.nodes[3].name, "w2");
  EXPECT_FALSE(e.nodes[0].parent.has_value());
  EXPECT_EQ(e.nodes[0].line, 24);
  EXPECT_EQ(e.nodes[3].line, 2);

  const NodeSpec& master = e.nodes[0];
  EXPECT_EQ(master.cores, 1u);
  EXPECT_FALSE(master.speed);
  EXPECT_FALSE(master.bandwidth);
  EXPECT_EQ(master.latency, 0.0);
  EXPECT_FALSE(master.cpu_quota);
  EXPECT_EQ(master.cpuset, "");
  EXPECT_EQ(master.listen, "");

  const NodeSpec& w2 = e.nodes[3];
  EXPECT_EQ(w2.parent, "w1");
  EXPECT_EQ(w2.cores, 2u);
  EXPECT_DOUBLE_EQ(*w2.speed, 2e9);
  EXPECT_DOUBLE_EQ(*w2.bandwidth, 125e6);
  EXPECT_DOUBLE_EQ(w2.latency, 50e-6);
  EXPECT_DOUBLE_EQ(*w2.cpu_quota, 0.5);
  EXPECT_EQ(w2.cpuset, "0-1");
  EXPECT_EQ(e.nodes[1].cores, 0u);
  EXPECT_DOUBLE_EQ(*e.nodes[1].bandwidth, 125e6);
  EXPECT_EQ(e.nodes[2].listen, "tcp://127.0.0.1:5555");
  EXPECT_DOUBLE_EQ(*e.nodes[2].speed, 1e9);

  ASSERT_EQ(e.apps.size(), 4u);
  EXPECT_EQ(e.apps[0].kernel, Kernel::matmul);
  EXPECT_EQ(e.apps[0].n, 512u);
  EXPECT_EQ(e.apps[0].weight, 2.0);
  EXPECT_EQ(e.apps[0].cores_per_task, 1u);
  EXPECT_EQ(e.apps[0].memory_per_task, 0u);
  EXPECT_EQ(e.apps[1].kernel, Kernel::matadd);
  EXPECT_EQ(e.apps[1].weight, 1.0);
  EXPECT_EQ(e.apps[1].memory_per_task, 512ull << 20);
  EXPECT_EQ(e.apps[1].cores_per_task, 2u);
  EXPECT_EQ(e.apps[2].kernel, Kernel::noop);
  EXPECT_EQ(e.apps[2].bytes, 4096u);
  EXPECT_EQ(e.apps[3].kernel, Kernel::abstract);  // inferred from bytes + flops
  EXPECT_DOUBLE_EQ(e.apps[3].flops, 2e9);
  EXPECT_EQ(e.apps[3].line, 48);

  EXPECT_EQ(e.run.buffer, 4u);
  EXPECT_EQ(e.run.policy, "cgbc");
  EXPECT_DOUBLE_EQ(e.run.epsilon, 0.2);
  EXPECT_EQ(e.run.seed, 7u);
  EXPECT_EQ(e.run.comm_model, CommModel::multi_port);
  EXPECT_DOUBLE_EQ(*e.run.max_out_bandwidth, 1024.0 * 1024 * 1024);

  EXPECT_EQ(e.total_tasks(), 315u);
  EXPECT_EQ(e.node_index("w3"), 2u);
  EXPECT_FALSE(e.node_index("nope"));
  EXPECT_FALSE(e.parent_index(0));
  EXPECT_EQ(e.parent_index(3), 1u);
  EXPECT_EQ(e.children(0), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(e.children(1), (std::vector<std::size_t>{3}));
  EXPECT_TRUE(e.children(3).empty());
  EXPECT_EQ(e.depth(0), 0u);
  EXPECT_EQ(e.depth(2), 1u);
  EXPECT_EQ(e.depth(3), 2u);
  EXPECT_EQ(e.path, "");
}

TEST(Experiment, EventsAreReadAndSortedByTime) {
  const Experiment e = parse_experiment(R"(
[[node]]
name = "m"
[[node]]
name = "w"
parent = "m"
bandwidth = "100MBps"
[[app]]
name = "a"
kernel = "noop"
bytes = 8
tasks = 1
[run]
migration = "pull"
[[event]]
at = "2m"
node = "w"
bandwidth = "10MBps"
[[event]]
at = 30
node = "w"
cpu_quota = 0.25
[[event]]
at = 45
node = "m"
speed = "2Gf"
)", "ev.toml");
  EXPECT_EQ(e.run.migration, MigrationMode::pull);
  ASSERT_EQ(e.events.size(), 3u);
  EXPECT_DOUBLE_EQ(e.events[0].at, 30);
  EXPECT_EQ(e.events[0].kind, EventKind::cpu_quota);
  EXPECT_DOUBLE_EQ(e.events[0].value, 0.25);
  EXPECT_EQ(e.events[0].line, 19);  // its [[event]] header
  EXPECT_EQ(e.events[1].kind, EventKind::speed);
  EXPECT_DOUBLE_EQ(e.events[1].value, 2e9);
  EXPECT_EQ(e.events[2].node, "w");
  EXPECT_DOUBLE_EQ(e.events[2].at, 120);
  EXPECT_EQ(e.events[2].kind, EventKind::bandwidth);
  EXPECT_DOUBLE_EQ(e.events[2].value, 10e6);
}

// Requirements (papers/lee2010 slides 17, 19): requirements, resources and queue balancing.
TEST(Experiment, RequirementsResourcesAndBalanceAreRead) {
  const Experiment e = parse_experiment(R"(
[[node]]
name = "m"
memory = "16GiB"
disk = "100GB"
[[app]]
name = "a"
kernel = "noop"
bytes = 8
tasks = 1
disk_per_task = "2GB"
min_speed = "1.5Gf"
[run]
migration = "push"
balance = "mll"
)", "req.toml");
  EXPECT_EQ(e.nodes[0].memory, 16ull << 30);
  EXPECT_EQ(e.nodes[0].disk, 100'000'000'000ull);
  EXPECT_EQ(e.apps[0].disk_per_task, 2'000'000'000ull);
  EXPECT_DOUBLE_EQ(e.apps[0].min_speed, 1.5e9);
  EXPECT_EQ(e.run.balance, core::BalanceMode::mll);
}

TEST(Experiment, RunDefaults) {
  const Experiment e = parse_experiment(
      "[[node]]\nname = \"m\"\n[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 0\ntasks = 1\n",
      "min.toml");
  EXPECT_EQ(e.run.buffer, 10u);
  EXPECT_EQ(e.run.policy, "fcfs");
  EXPECT_DOUBLE_EQ(e.run.epsilon, 0.1);
  EXPECT_EQ(e.run.seed, 1u);
  EXPECT_EQ(e.run.comm_model, CommModel::one_port);
  EXPECT_FALSE(e.run.max_out_bandwidth);
  ASSERT_EQ(e.nodes.size(), 1u);
  EXPECT_EQ(e.nodes[0].cores, 1u);
}

TEST(Experiment, LoadsFromFileAndRecordsPath) {
  const test_support::TempDir dir("model-test");
  const auto path = dir.path() / "experiment.toml";
  { std::ofstream(path) << good; }
  const Experiment e = load_experiment(path.string());
  EXPECT_EQ(e.path, path.string());
  EXPECT_EQ(e.nodes.size(), 4u);
}

TEST(Experiment, MissingFileIsAFileError) {
  try {
    load_experiment("/nonexistent/dir/x.toml");
    FAIL() << "no error";
  } catch (const FileError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/dir/x.toml");
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

TEST(Experiment, WhatReadsFileLineFieldMessage) {
  const FileError e("x.toml", 12, "node[0].cores", "must be >= 0");
  EXPECT_STREQ(e.what(), "x.toml:12: field 'node[0].cores': must be >= 0");
}

TEST(Experiment, WholeFloatsAndUnitStringsAreAcceptedWhereIntegersAndSizesAreExpected) {
  // users write sizes as 1e6 and "1 MB"; a float that is an exact integer is an integer.
  const auto e = parse_experiment(
      "[[node]]\nname = \"m\"\ncores = 2.0\n[[node]]\nname = \"w\"\nparent = \"m\"\nbandwidth = \"100Mbps\"\n"
      "[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 1e6\ntasks = 1e4\n"
      "[[app]]\nname = \"b\"\nkernel = \"noop\"\nbytes = \"1 MB\"\ntasks = 1\nmemory_per_task = \"1MiB\"\n"
      "[[app]]\nname = \"c\"\nkernel = \"matmul\"\nn = 5.12e2\ntasks = 1\n"
      "[run]\nbuffer = 4.0\n",
      "units.toml");
  EXPECT_EQ(e.nodes[0].cores, 2u);
  EXPECT_DOUBLE_EQ(*e.nodes[1].bandwidth, 100e6 / 8);
  EXPECT_EQ(e.apps[0].bytes, 1000000u);
  EXPECT_EQ(e.apps[0].tasks, 10000u);
  EXPECT_EQ(e.apps[1].bytes, 1000000u);
  EXPECT_EQ(e.apps[1].memory_per_task, 1u << 20);
  EXPECT_EQ(e.apps[2].n, 512u);
  EXPECT_EQ(e.run.buffer, 4u);
  // Not a whole number: refused, naming the field.
  try {
    parse_experiment("[[node]]\nname = \"m\"\n[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 1.5\ntasks = 1\n",
                     "frac.toml");
    FAIL() << "bytes = 1.5 accepted";
  } catch (const FileError& err) {
    EXPECT_EQ(err.line(), 6);
    EXPECT_EQ(err.field(), "app[0].bytes");
    EXPECT_NE(std::string(err.what()).find("not a whole number"), std::string::npos) << err.what();
  }
}

constexpr const char* master = "[[node]]\nname = \"m\"\n";           // lines 1-2

// papers/bertin2008 §2.2: `origin` names the node hosting the application's master; the
// runtime and SimGrid refuse any but the root, naming the field.
TEST(Experiment, OriginNamesTheApplicationsMaster) {
  const std::string text = "[[node]]\nname = \"m\"\n[[node]]\nname = \"w\"\nparent = \"m\"\n"
                           "[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 8\ntasks = 1\norigin = \"m\"\n"
                           "[[app]]\nname = \"b\"\nkernel = \"noop\"\nbytes = 8\ntasks = 1\norigin = \"w\"\n";
  const auto e = parse_experiment(text, "origins.toml");
  EXPECT_EQ(e.apps[0].origin, "m");
  EXPECT_EQ(e.apps[1].origin, "w");
  try {
    require_root_origins(e, "treefarm run");
    FAIL() << "an origin below the root accepted";
  } catch (const FileError& err) {
    EXPECT_EQ(err.field(), "app[1].origin");
    EXPECT_EQ(err.line(), 12);
    EXPECT_NE(std::string(err.what()).find("treefarm run"), std::string::npos) << err.what();
  }
  auto only_root = e;
  only_root.apps.pop_back();
  EXPECT_NO_THROW(require_root_origins(only_root, "treefarm run"));
}
constexpr const char* app = "[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 8\ntasks = 1\n";

struct BadCase {
  const char* label;
  std::string text;
  int line;
  const char* field;
  const char* message_part;
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) { return os << c.label; }

class BadExperiment : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadExperiment, ErrorNamesFileLineAndField) {
  const BadCase& c = GetParam();
  try {
    parse_experiment(c.text, "bad.toml");
    FAIL() << "accepted:\n" << c.text;
  } catch (const FileError& e) {
    EXPECT_EQ(e.file(), "bad.toml");
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_EQ(e.field(), c.field) << e.what();
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("bad.toml:" + std::to_string(c.line) + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(c.message_part), std::string::npos) << what;
  }
}

std::string s(const char* a) { return a; }

INSTANTIATE_TEST_SUITE_P(
    Validation, BadExperiment,
    ::testing::Values(
        BadCase{"syntax", s(master) + "cores = \n" + app, 3, "", "TOML syntax error"},
        // bertin2008 §2.2: an application's master is a node of the tree (line 8: origin).
        BadCase{"unknown origin", s(master) + app + "origin = \"nowhere\"\n", 8, "app[0].origin",
                "unknown node 'nowhere'"},
        BadCase{"wrong type", s(master) + "cores = \"four\"\n" + app, 3, "node[0].cores",
                "expected an integer, got a string"},
        BadCase{"float cores", s(master) + "cores = 1.5\n" + app, 3, "node[0].cores",
                "expected an integer"},
        BadCase{"negative cores", s(master) + "cores = -1\n" + app, 3, "node[0].cores",
                "between 0 and"},
        BadCase{"missing node name", s("[[node]]\ncores = 1\n") + app, 1, "node[0].name",
                "missing required key 'name'"},
        BadCase{"bad node name", s("[[node]]\nname = \"a b\"\n") + app, 2, "node[0].name",
                "invalid name"},
        BadCase{"duplicate node", s(master) + "[[node]]\nname = \"m\"\nparent = \"m\"\n" + app,
                4, "node[1].name", "duplicate node name 'm' (first defined at line 2)"},
        BadCase{"no node", s(app), 1, "node", "no [[node]]"},
        BadCase{"no master", s("[[node]]\nname = \"a\"\nparent = \"b\"\n[[node]]\nname = "
                               "\"b\"\nparent = \"a\"\n") + app,
                1, "node[0].parent", "exactly one node"},
        BadCase{"two masters", s(master) + "[[node]]\nname = \"n\"\n" + app, 3, "node[1].parent",
                "already the master"},
        BadCase{"unknown parent", s(master) + "[[node]]\nname = \"w\"\nparent = \"mm\"\n" + app,
                5, "node[1].parent", "unknown parent 'mm'"},
        BadCase{"cycle", s(master) + "[[node]]\nname = \"a\"\nparent = \"b\"\n" +
                             "[[node]]\nname = \"b\"\nparent = \"a\"\n" + app,
                5, "node[1].parent", "cycle (a -> b -> a)"},
        BadCase{"self parent", s(master) + "[[node]]\nname = \"a\"\nparent = \"a\"\n" + app, 5,
                "node[1].parent", "not reachable"},
        BadCase{"unknown node key", s(master) + "corse = 4\n" + app, 3, "node[0].corse",
                "unknown key 'corse'"},
        BadCase{"unknown top key", s(master) + app + "[runn]\nbuffer = 2\n", 8, "runn",
                "unknown key 'runn'"},
        BadCase{"unknown run key", s(master) + app + "[run]\nbufer = 2\n", 9, "run.bufer",
                "unknown key 'bufer'"},
        BadCase{"bad speed unit", s(master) + "speed = \"2GF\"\n" + app, 3, "node[0].speed",
                "unknown unit 'GF'"},
        BadCase{"bad bandwidth unit",
                s(master) + "[[node]]\nname = \"w\"\nparent = \"m\"\nbandwidth = \"1Gbit\"\n" + app,
                6, "node[1].bandwidth", "unknown unit"},
        BadCase{"bad latency unit",
                s(master) + "[[node]]\nname = \"w\"\nparent = \"m\"\nlatency = \"5 sec\"\n" + app,
                6, "node[1].latency", "unknown unit"},
        BadCase{"master link", s(master) + "bandwidth = 1e9\n" + app, 3, "node[0].bandwidth",
                "no parent"},
        BadCase{"negative speed", s(master) + "speed = -3.0\n" + app, 3, "node[0].speed",
                ">= 0"},
        BadCase{"event unknown node", s(master) + app + "[[event]]\nat = 1\nnode = \"x\"\ncpu_quota = 0.5\n", 10,
                "event[0].node", "no [[node]] is called 'x'"},
        BadCase{"event two changes",
                s(master) + app + "[[event]]\nat = 1\nnode = \"m\"\ncpu_quota = 0.5\nspeed = 1e9\n", 8,
                "event[0].cpu_quota", "give only one"},
        BadCase{"event no change", s(master) + app + "[[event]]\nat = 1\nnode = \"m\"\n", 8, "event[0].cpu_quota",
                "missing the change"},
        BadCase{"event negative time", s(master) + app + "[[event]]\nat = -1\nnode = \"m\"\ncpu_quota = 0.5\n", 9,
                "event[0].at", ">= 0"},
        BadCase{"event master link", s(master) + app + "[[event]]\nat = 1\nnode = \"m\"\nbandwidth = 1e6\n", 11,
                "event[0].bandwidth", "is the master"},
        BadCase{"event unknown key", s(master) + app + "[[event]]\nat = 1\nnode = \"m\"\nquota = 1\n", 11,
                "event[0].quota", "unknown key"},
        BadCase{"bad migration", s(master) + app + "[run]\nmigration = \"sideways\"\n", 9, "run.migration",
                "unknown migration mode"},
        BadCase{"bad balance", s(master) + app + "[run]\nmigration = \"pull\"\nbalance = \"most\"\n", 10, "run.balance",
                "unknown queue balancing"},
        BadCase{"balance without migration", s(master) + app + "[run]\nbalance = \"tll\"\n", 9, "run.balance",
                "migration = \"pull\" or \"push\""},
        BadCase{"zero quota", s(master) + "cpu_quota = 0\n" + app, 3, "node[0].cpu_quota",
                "> 0"},
        BadCase{"bad cpuset", s(master) + "cpuset = \"1-0\"\n" + app, 3, "node[0].cpuset",
                "core list"},
        BadCase{"bad listen", s(master) + "listen = 5555\n" + app, 3, "node[0].listen",
                "expected a string"},
        BadCase{"n too large", s(master) + "[[app]]\nname = \"a\"\nkernel = \"matmul\"\n" +
                                   "n = 100000\ntasks = 1\n",
                6, "app[0].n", "between 1 and 16384"},
        BadCase{"n missing", s(master) + "[[app]]\nname = \"a\"\nkernel = \"matadd\"\ntasks = 1\n",
                3, "app[0].n", "required by kernel matadd"},
        BadCase{"n for noop", s(master) + "[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 1\n" +
                                  "n = 4\ntasks = 1\n",
                7, "app[0].n", "not used by kernel noop"},
        BadCase{"too many tasks", s(master) + "[[app]]\nname = \"a\"\nkernel = \"noop\"\n" +
                                      "bytes = 1\ntasks = 2000000000\n",
                7, "app[0].tasks", "between 1 and 1000000000"},
        BadCase{"zero tasks", s(master) + "[[app]]\nname = \"a\"\nkernel = \"noop\"\n" +
                                  "bytes = 1\ntasks = 0\n",
                7, "app[0].tasks", "between 1"},
        BadCase{"tasks missing", s(master) + "[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 1\n",
                3, "app[0].tasks", "missing required key 'tasks'"},
        BadCase{"zero weight", s(master) + app + "weight = 0\n", 8, "app[0].weight", "> 0"},
        BadCase{"negative weight", s(master) + app + "weight = -1.5\n", 8, "app[0].weight",
                "> 0"},
        BadCase{"unknown kernel", s(master) + "[[app]]\nname = \"a\"\nkernel = \"fft\"\ntasks = 1\n",
                5, "app[0].kernel", "unknown kernel 'fft'"},
        BadCase{"no kernel", s(master) + "[[app]]\nname = \"a\"\nbytes = 8\ntasks = 1\n", 3,
                "app[0].kernel", "missing required key 'kernel'"},
        BadCase{"bad memory", s(master) + app + "memory_per_task = \"512Mb\"\n", 8,
                "app[0].memory_per_task", "bits"},
        BadCase{"negative bytes", s(master) + "[[app]]\nname = \"a\"\nkernel = \"noop\"\n" +
                                      "bytes = -8\ntasks = 1\n",
                6, "app[0].bytes", ">= 0"},
        BadCase{"duplicate app", s(master) + app + app, 9, "app[1].name",
                "duplicate application name 'a' (first defined at line 3)"},
        BadCase{"cores_per_task zero", s(master) + app + "cores_per_task = 0\n", 8,
                "app[0].cores_per_task", "between 1"},
        BadCase{"no app", s(master), 1, "app", "no [[app]]"},
        BadCase{"unknown policy", s(master) + app + "[run]\npolicy = \"round-robin\"\n", 9,
                "run.policy", "unknown policy 'round-robin'"},
        BadCase{"epsilon too big", s(master) + app + "[run]\nepsilon = 0.5\n", 9, "run.epsilon",
                "0 <= epsilon < 0.5"},
        BadCase{"buffer zero", s(master) + app + "[run]\nbuffer = 0\n", 9, "run.buffer",
                "between 1 and 1000000"},
        BadCase{"negative seed", s(master) + app + "[run]\nseed = -1\n", 9, "run.seed",
                "between 0"},
        BadCase{"bad comm model", s(master) + app + "[run]\ncomm_model = \"two-port\"\n", 9,
                "run.comm_model", "one-port or multi-port"},
        BadCase{"bad max out", s(master) + app + "[run]\nmax_out_bandwidth = \"fast\"\n", 9,
                "run.max_out_bandwidth", "number"},
        BadCase{"run not a table", "run = 3\n" + s(master) + app, 1, "run", "expected a table"},
        BadCase{"key after app goes into the app", s(master) + app + "run = 3\n", 8,
                "app[0].run", "unknown key 'run'"},
        BadCase{"node not array", s("[node]\nname = \"m\"\n") + app, 1, "node",
                "expected an array of tables"}),
    [](const ::testing::TestParamInfo<BadCase>& param_info) {
      std::string name = param_info.param.label;
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace treefarm::model

namespace treefarm::model {
namespace {

// The full example of docs/experiment-file.md must stay valid.
TEST(Experiment, DocumentedExampleParses) {
  const std::string doc_path = std::string(TREEFARM_SOURCE_DIR) + "/docs/experiment-file.md";
  std::ifstream in(doc_path);
  ASSERT_TRUE(in) << doc_path;
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto begin = doc.find("```toml\n");
  ASSERT_NE(begin, std::string::npos);
  const auto end = doc.find("```", begin + 8);
  const Experiment e = parse_experiment(doc.substr(begin + 8, end - begin - 8), doc_path);
  ASSERT_EQ(e.nodes.size(), 3u);
  EXPECT_EQ(e.nodes[2].name, "w2");
  EXPECT_EQ(e.apps.size(), 4u);
  EXPECT_EQ(e.apps[3].kernel, Kernel::abstract);
  EXPECT_EQ(e.run.policy, "cgbc");
}

}  // namespace
}  // namespace treefarm::model
