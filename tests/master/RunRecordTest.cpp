// master/RunRecord: what results.json says of the master's own cost. Its
// master_memory.dispatch_cpu_seconds is the master's CPU from the start of dispatch to the
// last result (docs/results-format.md): the tree's teardown after it (every child's Bye,
// the shared input segments unmapped) is a cost per child, not per task, and is left out.
#include "master/RunRecord.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/metrics/ProcessMemory.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::master {
namespace {

/// Spins this thread until the process has used `seconds` more CPU.
void burn_cpu(double seconds) {
  const double from = metrics::process_cpu_seconds();
  volatile double x = 0;
  while (metrics::process_cpu_seconds() - from < seconds)
    for (int i = 0; i < 10000; ++i) x = x + 1.0;
}

TEST(RunRecord, TheDispatchCpuEndsAtTheLastResultNotAfterTheTeardown) {
  const auto dir = std::filesystem::temp_directory_path() / ("treefarm-runrecord-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);  // the master makes --out before its record
  const std::string text =
      "[[node]]\nname = \"master\"\ncores = 1\n\n[[app]]\nname = \"a\"\nkernel = \"noop\"\nbytes = 16\ntasks = 3\n";
  const auto ex = model::parse_experiment(text, "record.toml");
  MasterOptions options;
  options.out_dir = dir.string();
  const auto memory_at_start = metrics::process_memory();
  {
    RunRecord record(ex, text, options, false);
    node::RootSetup root;
    record.install(root);
    root.on_start(1.0);
    burn_cpu(0.05);  // dispatch: counted
    for (std::uint64_t i = 0; i < 3; ++i) {
      net::msg::Result r;
      r.task_id = core::TaskId::make(core::AppId{0}, i).value;
      r.node = "master";
      root.on_result(r, false, 2.0 + static_cast<double>(i));
    }
    burn_cpu(0.3);  // after the last result (the teardown): not counted
    ASSERT_EQ(record.finish(0, false, memory_at_start), 0);
  }
  std::ifstream in(dir / "results.json");
  ASSERT_TRUE(in) << "no results.json in " << dir;
  const auto results = nlohmann::json::parse(in);
  const double cpu = results.at("master_memory").at("dispatch_cpu_seconds").get<double>();
  EXPECT_GE(cpu, 0.05);
  EXPECT_LT(cpu, 0.3) << "the CPU spent after the last result was counted";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace treefarm::master
