// tools/TreeLauncher: the `--migration` each worker is started with (docs/migration.md):
// with pull only workers that have children get it, with push every worker; the
// launcher's option overrides the experiment's [run] migration.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "runtime/model/ExperimentFile.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {
namespace {

model::Experiment two_levels(model::MigrationMode mode) {
  model::Experiment ex;
  for (const auto& [name, parent] : std::vector<std::pair<std::string, std::string>>{{"m", ""}, {"a", "m"}, {"b", "a"}}) {
    model::NodeSpec n;
    n.name = name;
    if (!parent.empty()) n.parent = parent;
    ex.nodes.push_back(n);
  }
  ex.run.migration = mode;
  return ex;
}

using Args = std::vector<std::string>;

TEST(TreeLauncher, PassesMigrationToInnerWorkersForPullAndToEveryWorkerForPush) {
  const auto pull = two_levels(model::MigrationMode::pull);
  LaunchOptions o;
  EXPECT_EQ(worker_migration_args(pull, o, "a"), (Args{"--migration", "pull"}));
  EXPECT_EQ(worker_migration_args(pull, o, "b"), Args{}) << "a leaf has no one to pull from";
  o.migration = "push";
  EXPECT_EQ(worker_migration_args(pull, o, "a"), (Args{"--migration", "push"}));
  EXPECT_EQ(worker_migration_args(pull, o, "b"), (Args{"--migration", "push"})) << "a leaf pushes to its parent";
  o.migration = "off";
  EXPECT_EQ(worker_migration_args(pull, o, "a"), Args{});
  const auto push = two_levels(model::MigrationMode::push);
  EXPECT_EQ(worker_migration_args(push, LaunchOptions{}, "b"), (Args{"--migration", "push"}));
  EXPECT_EQ(worker_migration_args(two_levels(model::MigrationMode::off), LaunchOptions{}, "a"), Args{});
}

// Queue balancing rides on the migration: `--balance` goes wherever `--migration`
// goes; a node's declared resources go to its worker whatever the migration.
TEST(TreeLauncher, PassesBalanceBesideMigrationAndDeclaredResources) {
  auto ex = two_levels(model::MigrationMode::pull);
  ex.run.balance = core::BalanceMode::mll;
  EXPECT_EQ(worker_migration_args(ex, LaunchOptions{}, "a"), (Args{"--migration", "pull", "--balance", "mll"}));
  EXPECT_EQ(worker_migration_args(ex, LaunchOptions{}, "b"), Args{});
  LaunchOptions o;
  o.balance = "tll";
  o.migration = "push";
  EXPECT_EQ(worker_migration_args(ex, o, "b"), (Args{"--migration", "push", "--balance", "tll"}));
  ex.nodes[2].memory = 1ull << 30;
  ex.nodes[2].speed = 2e9;
  EXPECT_EQ(worker_migration_args(ex, LaunchOptions{}, "b"), (Args{"--memory", "1073741824", "--speed", "2000000000.000000"}));
}

}  // namespace
// stop_when (the host calibration's run together, stopped once its estimate is tight):
// polled once every node runs; true ends every process and launch_tree returns 0 at once,
// the journal holding what the tree did, no results.json.
TEST(TreeLauncher, StopWhenEndsTheTreeBeforeItsLastTask) {
  const auto dir = std::filesystem::temp_directory_path() / ("treefarm-stopwhen-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "e.toml") << "[[node]]\nname = \"m\"\ncores = 0\n[[node]]\nname = \"w\"\nparent = \"m\"\ncores = 1\n"
                                   "[[app]]\nname = \"add\"\nkernel = \"matadd\"\nn = 64\nweight = 1\ntasks = 100000000\n"
                                   "[run]\nbuffer = 10\npolicy = \"fcfs\"\n";
  const auto ex = model::load_experiment((dir / "e.toml").string());
  LaunchOptions o;
  o.out_dir = (dir / "out").string();
  o.bin_dir = TREEFARM_BIN_DIR;
  o.quiet = true;
  o.log_level = "warn";
  o.master_args = {"--no-table"};
  o.timeout = 60;  // 100 million tasks: the timeout (124) unless stop_when ends it
  const auto journal = dir / "out" / "journal.tsv";
  int polls = 0;
  o.stop_when = [&] {
    ++polls;
    std::error_code ec;
    return std::filesystem::exists(journal, ec) && std::filesystem::file_size(journal, ec) > 2000;
  };
  const std::atomic<bool> never{false};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(launch_tree(ex, o, never), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 50.0);
  EXPECT_GT(polls, 0);
  EXPECT_GT(std::filesystem::file_size(journal), 2000u) << "the journal holds what the tree did";
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "results.json")) << "stopped: no results";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace treefarm::tools
