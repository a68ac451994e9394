// treefarm-lab campaign paper (docs/results/paper-campaign.md).
#include <iostream>
#include <memory>
#include <string>

#include "lab/LabCommands.hpp"
#include "lab/campaign/Campaign.hpp"
#include "tools/cli/TaskSizesOption.hpp"

namespace treefarm::lab {

void add_paper_command(CLI::App& campaign, Commands& out) {
  auto camp = std::make_shared<campaign::CampaignOptions>();
  auto* paper = campaign.add_subcommand("paper", "papers/beaumont2006 section 5: 150 random trees x 5 policies, histograms and report\n"
                                               "(SIGINT/SIGTERM: no new simulation, the running ones ended, the report of "
                                               "those finished written; exit 130/143)");
  paper->add_option("--out", camp->out_dir, "Output directory (paper-campaign.md, campaign.json, PNGs)")->capture_default_str();
  paper->add_option("--jobs", camp->jobs, "Simulations in parallel (0 = number of cores)")->capture_default_str();
  paper->add_flag("--quick", camp->quick, "A small subset, for a smoke run");
  paper->add_option("--seed", camp->seed, "Seed of the platforms")->capture_default_str();
  cli::add_task_sizes_option(*paper, camp->task_sizes);
  out.push_back({paper, [camp] {
                   auto c = *camp;
                   const bool paper_sizes = c.task_sizes == simulate::GenOptions::TaskSizes::paper_matrices;
                   c.command = "treefarm-lab campaign paper --out " + c.out_dir + " --jobs " + std::to_string(c.jobs) +
                               (c.quick ? " --quick" : "") + (paper_sizes ? " --task-sizes paper" : "");
                   // SIGINT/SIGTERM: no new simulation, the running ones ended, what finished written.
                   const int rc = campaign::paper_campaign(c.quick ? campaign::quick_subset(c) : c, std::cout, &interrupted());
                   return rc == 130 ? 128 + interrupt_signal() : rc;
                 }});
}

}  // namespace treefarm::lab
