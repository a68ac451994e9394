#include "runtime/core/MigrationOptions.hpp"

#include <stdexcept>

namespace treefarm::core {

void apply_migration_options(MigrationMode& migration, BalanceMode& balance, const std::string& migration_option,
                             const std::string& balance_option) {
  if (!migration_option.empty()) {
    const auto m = migration_from_string(migration_option);
    if (!m) throw std::invalid_argument("--migration: expected off, pull or push, got '" + migration_option + "'");
    migration = *m;
  }
  if (!balance_option.empty()) {
    const auto b = balance_from_string(balance_option);
    if (!b) throw std::invalid_argument("--balance: expected off, tll or mll, got '" + balance_option + "'");
    balance = *b;
  }
  if (balance != BalanceMode::off && migration == MigrationMode::off)
    throw std::invalid_argument(std::string("--balance ") + to_string(balance) +
                                ": queue balancing moves tasks by migration; give --migration pull or push too");
}

}  // namespace treefarm::core
