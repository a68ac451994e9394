// tools/TreeLauncher: the `--migration` each worker is started with (docs/migration.md):
// with pull only workers that have children get it, with push every worker; the
// launcher's option overrides the experiment's [run] migration.
#include <gtest/gtest.h>

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

// Queue balancing rides on the migration (issue 16): `--balance` goes wherever `--migration`
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
}  // namespace treefarm::tools
