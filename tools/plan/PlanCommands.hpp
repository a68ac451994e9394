#pragma once
/// @file PlanCommands.hpp
/// The planning subcommands (docs/commands.md): `treefarm plan`, `treefarm gen-machines`
/// and the study `treefarm experiment plan`. main() registers them with
/// add_plan_commands() and runs the chosen one with run_plan_commands().

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace treefarm::tools {

struct PlanCommandState;

/// Holds the options of the planning subcommands between parsing and running.
class PlanCommands {
 public:
  /// Adds `plan` and `gen-machines` to `app` and `plan` to `experiment` (the
  /// `treefarm experiment` group).
  PlanCommands(CLI::App& app, CLI::App& experiment);
  ~PlanCommands();
  PlanCommands(const PlanCommands&) = delete;
  PlanCommands& operator=(const PlanCommands&) = delete;

  /// Runs the chosen planning subcommand and returns its exit code, or nullopt when none
  /// of them was chosen. Throws on bad input (main prints the message).
  std::optional<int> run(std::ostream& out, std::ostream& err);

 private:
  std::unique_ptr<PlanCommandState> state_;
};

}  // namespace treefarm::tools
