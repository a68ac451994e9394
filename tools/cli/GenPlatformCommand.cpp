// treefarm gen-platform (docs/commands.md).
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/cli/CliSupport.hpp"
#include "tools/cli/Command.hpp"
#include "tools/cli/TaskSizesOption.hpp"
#include "tools/simulate/GenPlatform.hpp"

namespace treefarm::cli {

void add_gen_platform_command(CLI::App& app, Commands& out) {
  auto go = std::make_shared<simulate::GenOptions>();
  auto* gen = app.add_subcommand("gen-platform", "Print a random tree platform (papers/beaumont2006 section 5.1) as an experiment file");
  gen->add_option("--nodes", go->nodes, "Nodes, master included")->required();
  gen->add_option("--max-degree", go->max_degree, "Most children per node")->required();
  gen->add_option("--apps", go->apps, "Abstract applications")->required();
  gen->add_option("--seed", go->seed, "Random seed")->required();
  gen->add_option("--ccr-max", go->ccr_max, "Largest CCR (bytes/flop); CCRs evenly spaced from 0.001")->capture_default_str()->check(cli_support::positive_number());
  gen->add_option("--tasks", go->tasks, "Tasks per application")->capture_default_str();
  add_task_sizes_option(*gen, go->task_sizes);
  out.push_back({gen, [go] {
                   std::string text;
                   try {
                     text = simulate::generate_platform(*go);
                   } catch (const std::invalid_argument& e) {  // a refused option value: exit 2
                     throw cli_support::UsageError(e.what());
                   }
                   std::cout << text;
                   return 0;
                 }});
}

}  // namespace treefarm::cli
