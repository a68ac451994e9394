// treefarm-lab campaign plan (docs/results/plan.md).
#include <csignal>
#include <iostream>
#include <memory>
#include <sstream>

#include "lab/LabCommands.hpp"
#include "lab/planning/PlanStudy.hpp"

namespace treefarm::lab {

void add_plan_study_command(CLI::App& campaign, Commands& out) {
  struct Cli {
    planning::PlanStudyOptions o;
    bool quick = false;
  };
  auto c = std::make_shared<Cli>();
  auto* cmd = campaign.add_subcommand("plan", "Planning study on generated multi-LAN sets: each method against "
                                              "exhaustive and the best found, planning time, QoS failures");
  cmd->add_option("--out", c->o.out_dir, "Output directory (plan-study.md, plan-study.json)")->capture_default_str();
  cmd->add_option("--small-sets", c->o.small_sets, "Sets per small size (exhaustive part)")->capture_default_str();
  cmd->add_option("--small-sizes", c->o.small_sizes, "Machines of the small sets (<= 8)")->delimiter(',');
  cmd->add_option("--large-sizes", c->o.large_sizes, "Machines of the large sets")->delimiter(',');
  cmd->add_option("--large-sets", c->o.large_sets, "Sets per large size")->capture_default_str();
  cmd->add_option("--qos-sets", c->o.qos_sets, "Sets of the QoS-failure part")->capture_default_str();
  cmd->add_option("--rmshc-seconds", c->o.rmshc_seconds, "RMSHC budget per plan, seconds")->capture_default_str();
  cmd->add_option("--seed", c->o.seed, "First seed of the generated sets")->capture_default_str();
  cmd->add_flag("--quick", c->quick, "A small subset, for a smoke run");
  out.push_back({cmd, [c] {
                   // A study has nothing to clean up: Ctrl-C ends it at once.
                   std::signal(SIGINT, SIG_DFL);
                   std::signal(SIGTERM, SIG_DFL);
                   auto o = c->o;
                   if (c->quick) {
                     o.small_sizes = {4, 5};
                     o.small_sets = 3;
                     o.large_sizes = {16, 64};
                     o.large_sets = 1;
                     o.qos_sets = 2;
                     o.rmshc_seconds = 2;
                   }
                   std::ostringstream line;
                   line << "treefarm-lab campaign plan --out " << o.out_dir << " --seed " << o.seed
                        << " --rmshc-seconds " << o.rmshc_seconds;
                   if (c->quick) {
                     line << " --quick";
                   } else {
                     line << " --small-sets " << o.small_sets << " --large-sets " << o.large_sets << " --qos-sets "
                          << o.qos_sets << " --small-sizes ";
                     for (std::size_t i = 0; i < o.small_sizes.size(); ++i) line << (i ? "," : "") << o.small_sizes[i];
                     line << " --large-sizes ";
                     for (std::size_t i = 0; i < o.large_sizes.size(); ++i) line << (i ? "," : "") << o.large_sizes[i];
                   }
                   o.command = line.str();
                   return planning::plan_study(o, std::cout);
                 }});
}

}  // namespace treefarm::lab
