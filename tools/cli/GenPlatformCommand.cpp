// treefarm gen-platform (docs/commands.md).
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/cli/CliSupport.hpp"
#include "tools/cli/Command.hpp"
#include "tools/cli/TaskSizesOption.hpp"
#include "tools/sim/GenPlatform.hpp"

namespace treefarm::cli {

void add_task_sizes_option(CLI::App& cmd, tools::GenOptions::TaskSizes& sizes) {
  cmd.add_option_function<std::string>(
         "--task-sizes",
         [&sizes](const std::string& v) {
           sizes = v == "paper" ? tools::GenOptions::TaskSizes::paper_matrices : tools::GenOptions::TaskSizes::same_work;
         },
         "same-work (default): 1e9 flop per task, the CCR sets the bytes; paper: 3500x3500 matrices (98 MB) per task, "
         "the CCR sets the flop (beaumont2006 section 5.1.3)")
      ->check(CLI::IsMember({"same-work", "paper"}));
}

void add_gen_platform_command(CLI::App& app, Commands& out) {
  auto go = std::make_shared<tools::GenOptions>();
  auto* gen = app.add_subcommand("gen-platform", "Print a random tree platform (papers/beaumont2006 section 5.1) as an experiment file");
  gen->add_option("--nodes", go->nodes, "Nodes, master included")->required();
  gen->add_option("--max-degree", go->max_degree, "Most children per node")->required();
  gen->add_option("--apps", go->apps, "Abstract applications")->required();
  gen->add_option("--seed", go->seed, "Random seed")->required();
  gen->add_option("--ccr-max", go->ccr_max, "Largest CCR (bytes/flop); CCRs evenly spaced from 0.001")->capture_default_str();
  gen->add_option("--tasks", go->tasks, "Tasks per application")->capture_default_str();
  add_task_sizes_option(*gen, go->task_sizes);
  out.push_back({gen, [go] {
                   std::string text;
                   try {
                     text = tools::generate_platform(*go);
                   } catch (const std::invalid_argument& e) {  // a refused option value: exit 2
                     throw cli_support::UsageError(e.what());
                   }
                   std::cout << text;
                   return 0;
                 }});
}

}  // namespace treefarm::cli
