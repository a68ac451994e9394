// treefarm gen-platform (docs/commands.md).
#include <iostream>
#include <memory>

#include "tools/cli/Command.hpp"
#include "tools/sim/GenPlatform.hpp"

namespace treefarm::cli {

void add_gen_platform_command(CLI::App& app, Commands& out) {
  auto go = std::make_shared<tools::GenOptions>();
  auto* gen = app.add_subcommand("gen-platform", "Print a random tree platform (papers/beaumont2006 section 5.1) as an experiment file");
  gen->add_option("--nodes", go->nodes, "Nodes, master included")->required();
  gen->add_option("--max-degree", go->max_degree, "Most children per node")->required();
  gen->add_option("--apps", go->apps, "Abstract applications")->required();
  gen->add_option("--seed", go->seed, "Random seed")->required();
  gen->add_option("--ccr-max", go->ccr_max, "Largest CCR (bytes/flop); CCRs evenly spaced from 0.001")->capture_default_str();
  gen->add_option("--tasks", go->tasks, "Tasks per application")->capture_default_str();
  auto sizes = std::make_shared<std::string>("same-work");
  gen->add_option("--task-sizes", *sizes,
                  "same-work: 1e9 flop per task, the CCR sets the bytes; paper: 3500x3500 matrices (98 MB) per task, the "
                  "CCR sets the flop (section 5.1.3)")
      ->check(CLI::IsMember({"same-work", "paper"}))->capture_default_str();
  out.push_back({gen, [go, sizes] {
                   if (*sizes == "paper") go->task_sizes = tools::GenOptions::TaskSizes::paper_matrices;
                   std::cout << tools::generate_platform(*go);
                   return 0;
                 }});
}

}  // namespace treefarm::cli
