// treefarm experiment paper (docs/commands.md).
#include <iostream>
#include <memory>

#include "tools/cli/Command.hpp"
#include "tools/sim/Campaign.hpp"

namespace treefarm::cli {

void add_experiment_command(CLI::App& app, Commands& out) {
  auto camp = std::make_shared<tools::CampaignOptions>();
  auto* experiment_cmd = app.add_subcommand("experiment", "Reproduce a published experiment in simulation");
  experiment_cmd->require_subcommand(1);
  auto* paper = experiment_cmd->add_subcommand("paper", "papers/beaumont2006 section 5: 150 random trees x 5 policies, histograms and report");
  paper->add_option("--out", camp->out_dir, "Output directory (paper-campaign.md, campaign.json, PNGs)")->capture_default_str();
  paper->add_option("--jobs", camp->jobs, "Simulations in parallel (0 = number of cores)")->capture_default_str();
  paper->add_flag("--quick", camp->quick, "A small subset, for a smoke run");
  paper->add_option("--seed", camp->seed, "Seed of the platforms")->capture_default_str();
  out.push_back({paper, [camp] {
                   auto c = *camp;
                   c.command = "treefarm experiment paper --out " + c.out_dir + " --jobs " + std::to_string(c.jobs) +
                               (c.quick ? " --quick" : "");
                   return tools::paper_campaign(c.quick ? tools::quick_subset(c) : c, std::cout);
                 }});
}

}  // namespace treefarm::cli
