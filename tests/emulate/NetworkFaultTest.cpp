// `treefarm emulate ... run` under network faults (tools/emulate/FaultPlayer): 5 % loss on
// one link, a link down for a few seconds, a subtree partitioned then healed — each run
// completes with every task exactly once and none wrong, and its throughput is reported
// against the same run without faults; a partition longer than the rejoin timeout ends
// the cut-off workers (exit code 5) and the rest completes. Nothing is left behind.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/model/Fault.hpp"
#include "tests/emulate/EmulationTestSupport.hpp"
#include "tools/emulate/Emulate.hpp"

using namespace treefarm;
using namespace treefarm::emulate;
using namespace treefarm::emulate::testing;

namespace {

// master -> relay (-> leaf) and master -> side; links of 40 Mbit/s, tasks of 200 KiB of
// input (matmul n = 112): about 25 tasks/s per link, a run of about 10 s.
const char* const tree = R"(
[[node]]
name = "master"
cores = 0
cpu_quota = 0.2
[[node]]
name = "relay"
parent = "master"
cores = 1
bandwidth = "40Mbps"
cpu_quota = 0.4
[[node]]
name = "leaf"
parent = "relay"
cores = 1
bandwidth = "40Mbps"
cpu_quota = 0.4
[[node]]
name = "side"
parent = "master"
cores = 1
bandwidth = "40Mbps"
cpu_quota = 0.4
[[app]]
name = "mm"
kernel = "matmul"
n = 112
tasks = 400
[run]
buffer = 4
comm_model = "multi-port"
)";

struct Outcome {
  int rc = -1;
  nlohmann::json results;
  std::string log;        ///< what emulate and the launcher wrote on stderr
  double throughput = 0;  ///< tasks/s over the whole run
};

/// Runs `tree` with `faults` (command-line form), heartbeats every 0.5 s and a peer
/// declared dead after 2 s of silence, workers rejoining for `rejoin` seconds.
Outcome run_with(const std::vector<std::string>& faults, double rejoin = 60) {
  EmulationRun run(tree, 240);
  for (const auto& f : faults) run.options.faults.push_back(model::parse_fault_option(f));
  const std::vector<std::string> hb{"--heartbeat-interval", "0.5", "--heartbeat-timeout", "2"};
  run.options.launch.master_args = hb;
  run.options.launch.worker_args = hb;
  run.options.launch.worker_args.insert(run.options.launch.worker_args.end(), {"--rejoin-timeout", std::to_string(rejoin)});
  std::atomic<bool> interrupted{false};
  Outcome o;
  ::testing::internal::CaptureStderr();
  o.rc = emulate_command(run.file, "run", run.options, interrupted);
  o.log = ::testing::internal::GetCapturedStderr();
  std::ifstream f(run.out() / "results.json");
  if (f) o.results = nlohmann::json::parse(f);
  if (o.results.contains("duration") && o.results["duration"].get<double>() > 0)
    o.throughput = 400.0 / o.results["duration"].get<double>();
  EXPECT_EQ(leftovers(run.prefix), std::vector<std::string>{}) << "namespaces, links or rules left behind";
  return o;
}

/// Every task exactly once, none wrong, none lost.
void expect_exactly_once(const Outcome& o) {
  ASSERT_EQ(o.rc, 0) << o.log;
  EXPECT_TRUE(o.results.at("ok").get<bool>()) << o.log;
  EXPECT_EQ(o.results.at("lost").get<int>(), 0);
  const auto& app = o.results.at("apps").at(0);
  EXPECT_EQ(app.at("completed").get<std::uint64_t>(), 400u);
  EXPECT_EQ(app.at("wrong").get<std::uint64_t>(), 0u);
  EXPECT_EQ(app.at("failed").get<std::uint64_t>(), 0u);
  std::set<std::uint64_t> seen;
  for (const auto& t : o.results.at("tasks"))
    EXPECT_TRUE(seen.insert(t.at("id").get<std::uint64_t>()).second) << "task recorded twice: " << t.dump();
  EXPECT_EQ(seen.size(), 400u);
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

/// The same run without faults, once for the whole binary.
const Outcome& baseline() {
  static const Outcome o = run_with({});
  return o;
}

void report(const char* what, const Outcome& o) {
  const double base = baseline().throughput;
  std::printf("[ fault    ] %s: %.1f tasks/s against %.1f without faults (%.0f %% lost), duplicates %d\n", what,
              o.throughput, base, base > 0 ? 100.0 * (1.0 - o.throughput / base) : 0.0,
              o.results.value("duplicates", 0));
}

}  // namespace

TEST(NetworkFault, WithoutFaultsTheTreeCompletes) {
  SKIP_UNLESS_EMULATION();
  expect_exactly_once(baseline());
  EXPECT_GT(baseline().throughput, 0.0);
}

TEST(NetworkFault, FivePercentLossOnOneLinkLosesNoTask) {
  SKIP_UNLESS_EMULATION();
  const auto o = run_with({"relay:0:600:loss=0.05"});
  expect_exactly_once(o);
  EXPECT_TRUE(has(o.log, "fault started: node 'relay' loss 0.05")) << o.log;
  EXPECT_TRUE(has(o.log, "fault ended: node 'relay' loss 0.05")) << o.log;  // by stop() at the end of the run
  report("5 % loss on relay's link", o);
}

TEST(NetworkFault, ALinkDownForAFewSecondsLosesNoTask) {
  SKIP_UNLESS_EMULATION();
  const auto o = run_with({"side:3:4:down"});
  expect_exactly_once(o);
  EXPECT_TRUE(has(o.log, "fault started: node 'side' down")) << o.log;
  EXPECT_TRUE(has(o.log, "fault ended: node 'side' down")) << o.log;
  EXPECT_GT(o.results.at("duration").get<double>(), 5.0) << "the run ended before the fault: it tested nothing";
  report("side's link down 4 s", o);
}

TEST(NetworkFault, ASubtreePartitionedThenHealedRejoinsAndLosesNoTask) {
  SKIP_UNLESS_EMULATION();
  const auto o = run_with({"relay:3:5:partition"});
  expect_exactly_once(o);
  EXPECT_TRUE(has(o.log, "fault started: node 'relay' partition")) << o.log;
  EXPECT_TRUE(has(o.log, "fault ended: node 'relay' partition")) << o.log;
  EXPECT_GT(o.results.at("duration").get<double>(), 6.0) << "the run ended before the fault: it tested nothing";
  EXPECT_FALSE(has(o.log, "exited with code")) << "no worker gave up: they rejoined\n" << o.log;
  report("relay + leaf partitioned 5 s", o);
}

TEST(NetworkFault, APartitionLongerThanTheRejoinTimeoutEndsTheCutOffWorkersAndTheRestCompletes) {
  SKIP_UNLESS_EMULATION();
  const auto o = run_with({"relay:3:60:partition"}, 3);
  expect_exactly_once(o);
  EXPECT_TRUE(has(o.log, "worker 'relay' exited with code 5")) << o.log;
  EXPECT_TRUE(has(o.log, "worker 'leaf' exited with code 5")) << o.log;
  EXPECT_TRUE(has(o.log, "fault ended: node 'relay' partition")) << "ended by the run's end\n" << o.log;
  std::uint64_t side = 0;
  for (const auto& n : o.results.at("nodes"))
    if (n.at("name") == "side") side = n.at("tasks_computed").get<std::uint64_t>();
  EXPECT_GT(side, 200u) << "side did most of the work";
  report("relay + leaf cut off for good", o);
}
