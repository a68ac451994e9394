// treefarm plan, gen-machines, experiment plan (tools/plan/, docs/planning.md).
#include <iostream>
#include <memory>

#include "tools/cli/Command.hpp"
#include "tools/plan/PlanCommands.hpp"

namespace treefarm::cli {

void add_plan_command(CLI::App& app, Commands& out) {
  auto* experiment = app.get_subcommand("experiment");
  auto plan = std::make_shared<tools::PlanCommands>(app, *experiment);
  auto* top_plan = app.get_subcommand("plan");
  auto* gen_machines = app.get_subcommand("gen-machines");
  auto* experiment_plan = experiment->get_subcommand("plan");
  out.push_back({top_plan, [plan] { return plan->run(std::cout, std::cerr).value_or(0); },
                 [=] { return top_plan->parsed() || gen_machines->parsed() || experiment_plan->parsed(); }});
}

}  // namespace treefarm::cli
