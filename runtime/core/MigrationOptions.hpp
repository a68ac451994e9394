#pragma once
/// @file MigrationOptions.hpp
/// The `--migration` and `--balance` options of the commands that run a tree (master,
/// simulate): one parser and one check for both (docs/migration.md).

#include <string>

#include "runtime/core/Migration.hpp"

namespace treefarm::core {

/// Applies `--migration` and `--balance` ("" = keep what the experiment says) to a run's
/// `migration` and `balance`, then checks that balancing has a migration mode to move
/// tasks with. Throws std::invalid_argument naming the option.
void apply_migration_options(MigrationMode& migration, BalanceMode& balance, const std::string& migration_option,
                             const std::string& balance_option);

}  // namespace treefarm::core
