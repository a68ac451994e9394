// model::write_experiment: every example file, and an experiment using every key, read
// back field for field; an experiment without nodes (a served tree's) read with
// parse_experiment_nodes_optional.

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>

#include "runtime/model/BagSource.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/model/ExperimentFile.hpp"

namespace treefarm::model {
namespace {

void expect_same(const Experiment& a, const Experiment& b, const std::string& what) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size()) << what;
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const auto &x = a.nodes[i], &y = b.nodes[i];
    SCOPED_TRACE(what + " node " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.parent, y.parent);
    EXPECT_EQ(x.cores, y.cores);
    EXPECT_EQ(x.listen, y.listen);
    EXPECT_EQ(x.speed, y.speed);
    EXPECT_EQ(x.bandwidth, y.bandwidth);
    EXPECT_EQ(x.latency, y.latency);
    EXPECT_EQ(x.cpu_quota, y.cpu_quota);
    EXPECT_EQ(x.cpuset, y.cpuset);
    EXPECT_EQ(x.memory, y.memory);
    EXPECT_EQ(x.disk, y.disk);
  }
  ASSERT_EQ(a.apps.size(), b.apps.size()) << what;
  for (std::size_t i = 0; i < a.apps.size(); ++i) {
    const auto &x = a.apps[i], &y = b.apps[i];
    SCOPED_TRACE(what + " app " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.kernel, y.kernel);
    EXPECT_EQ(x.n, y.n);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.flops, y.flops);
    EXPECT_EQ(x.weight, y.weight);
    EXPECT_EQ(x.tasks, y.tasks);
    EXPECT_EQ(x.cores_per_task, y.cores_per_task);
    EXPECT_EQ(x.memory_per_task, y.memory_per_task);
    EXPECT_EQ(x.disk_per_task, y.disk_per_task);
    EXPECT_EQ(x.min_speed, y.min_speed);
    EXPECT_EQ(x.origin, y.origin);
    EXPECT_EQ(x.argv, y.argv);
    EXPECT_EQ(x.max_retries, y.max_retries);
    ASSERT_EQ(x.bag == nullptr, y.bag == nullptr);
    if (x.bag) {  // a bag's inputs: the same form, tasks and placeholders of every task
      EXPECT_EQ(x.bag->form(), y.bag->form());
      ASSERT_EQ(x.bag->count(), y.bag->count());
      EXPECT_EQ(x.bag->total_bytes(), y.bag->total_bytes());
      for (std::uint64_t t = 0; t < x.bag->count(); ++t) EXPECT_EQ(x.bag->fields(t), y.bag->fields(t)) << "task " << t;
    }
    EXPECT_EQ(x.input_file, y.input_file);
    EXPECT_EQ(x.timeout, y.timeout);
    EXPECT_EQ(x.expect_digest, y.expect_digest);
    EXPECT_EQ(x.spot_check, y.spot_check);
    EXPECT_EQ(x.output_file, y.output_file);
    EXPECT_EQ(x.max_output_bytes, y.max_output_bytes);
    EXPECT_EQ(x.send_output, y.send_output);
  }
  EXPECT_EQ(a.run.buffer, b.run.buffer) << what;
  EXPECT_EQ(a.run.policy, b.run.policy) << what;
  EXPECT_EQ(a.run.epsilon, b.run.epsilon) << what;
  EXPECT_EQ(a.run.seed, b.run.seed) << what;
  EXPECT_EQ(a.run.comm_model, b.run.comm_model) << what;
  EXPECT_EQ(a.run.max_out_bandwidth, b.run.max_out_bandwidth) << what;
  EXPECT_EQ(a.run.migration, b.run.migration) << what;
  EXPECT_EQ(a.run.balance, b.run.balance) << what;
  EXPECT_EQ(a.run.policy_options, b.run.policy_options) << what;
  ASSERT_EQ(a.events.size(), b.events.size()) << what;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].at, b.events[i].at) << what;
    EXPECT_EQ(a.events[i].node, b.events[i].node) << what;
    EXPECT_EQ(a.events[i].kind, b.events[i].kind) << what;
    EXPECT_EQ(a.events[i].value, b.events[i].value) << what;
  }
}

TEST(ExperimentFile, EveryExampleReadsBackTheSame) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TREEFARM_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".toml") continue;
    const auto original = load_experiment_nodes_optional(entry.path().string());  // served.toml has none
    // Written beside the original, so that a relative input_file resolves alike.
    const auto text = write_experiment(original, "written by ExperimentFileTest");
    const auto back = parse_experiment_nodes_optional(text, entry.path().string());
    expect_same(original, back, entry.path().filename().string());
    EXPECT_EQ(write_experiment(back, "written by ExperimentFileTest"), text) << text;
    ++files;
  }
  EXPECT_GE(files, 10);
}

TEST(ExperimentFile, EveryKeyReadsBackTheSame) {
  const std::string text = R"(
[[node]]
name = "m"
cores = 0
listen = "tcp://*:5555"
speed = "1.5Gf"
[[node]]
name = "w.1"
parent = "m"
cores = 3
speed = 123456789.123
bandwidth = "125MBps"
latency = "50us"
cpu_quota = 0.3
cpuset = "0-1,3"
memory = 4000000000
disk = 17
[[app]]
name = "mm"
kernel = "matmul"
n = 384
tasks = 10
weight = 0.1
cores_per_task = 2
memory_per_task = 1000000
disk_per_task = 3
min_speed = 1e9
origin = "w.1"
[[app]]
name = "sh"
kernel = "command"
argv = ["sh", "-c", "tr a-z A-Z < \"{input}\" # \\ quoted", "{index}"]
bytes = 4096
tasks = 3
timeout = 2.5
expect_digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
spot_check = true
output_file = "{index}.out"
max_output_bytes = 1000
[[app]]
name = "abs"
bytes = 1000
flops = 3e9
tasks = 1
[run]
buffer = 7
policy = "price"
epsilon = 0.15
seed = 99
comm_model = "multi-port"
max_out_bandwidth = "1Gbps"
migration = "push"
balance = "mll"
[policy.price]
alpha = 2
rate_unit = 0.001
[[event]]
at = "30s"
node = "w.1"
bandwidth = "10MBps"
[[event]]
at = 5
node = "m"
cpu_quota = 0.5
)";
  const auto original = parse_experiment(text, "every-key.toml");
  const auto written = write_experiment(original);
  expect_same(original, parse_experiment(written, "written.toml"), "every key");
  EXPECT_EQ(written.find("\n\n\n"), std::string::npos) << written;
  EXPECT_EQ(written.rfind("[[node]]", 0), 0u) << "no header: the file starts with the tree\n" << written;
}

TEST(ExperimentFile, AnExperimentWithoutNodesIsReadWhenNodesAreOptional) {
  const std::string apps = "[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 16\ntasks = 5\n\n[run]\nbuffer = 3\n";
  EXPECT_THROW(parse_experiment(apps, "apps.toml"), FileError);  // a tree is needed by default
  const auto ex = parse_experiment_nodes_optional(apps, "apps.toml");
  EXPECT_TRUE(ex.nodes.empty());
  ASSERT_EQ(ex.apps.size(), 1u);
  EXPECT_EQ(ex.run.buffer, 3u);
  const auto text = write_experiment(ex, "apps only");
  EXPECT_EQ(text.find("[[node]]"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("# apps only\n", 0), 0u) << text;
  expect_same(ex, parse_experiment_nodes_optional(text, "back.toml"), "without nodes");
  // Still checked: an [[event]] names a node that must exist.
  EXPECT_THROW(parse_experiment_nodes_optional(apps + "[[event]]\nat = 1\nnode = \"w\"\nspeed = 1e9\n", "ev.toml"),
               FileError);
}

TEST(ExperimentFile, RefusesANumberAFileCannotHold) {
  auto ex = parse_experiment("[[node]]\nname = \"m\"\n[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 1\ntasks = 1\n", "x.toml");
  ex.apps[0].weight = std::numeric_limits<double>::infinity();
  EXPECT_THROW(write_experiment(ex), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::model
