// treefarm experiment paper (docs/commands.md).
#include <iostream>
#include <memory>

#include "tools/cli/Command.hpp"
#include "tools/cli/TaskSizesOption.hpp"
#include "tools/sim/Campaign.hpp"
#include "runtime/cli/CliSupport.hpp"
#include "runtime/core/policies/PricePolicy.hpp"
#include "tools/sim/PriceStudy.hpp"

namespace treefarm::cli {

void add_experiment_command(CLI::App& app, Commands& out) {
  auto camp = std::make_shared<tools::CampaignOptions>();
  auto* experiment_cmd = app.add_subcommand("experiment", "Reproduce a published experiment in simulation");
  experiment_cmd->require_subcommand(1);
  auto* paper = experiment_cmd->add_subcommand("paper", "papers/beaumont2006 section 5: 150 random trees x 5 policies, histograms and report\n"
                                               "(SIGINT/SIGTERM: no new simulation, the running ones ended, the report of "
                                               "those finished written; exit 130/143)");
  paper->add_option("--out", camp->out_dir, "Output directory (paper-campaign.md, campaign.json, PNGs)")->capture_default_str();
  paper->add_option("--jobs", camp->jobs, "Simulations in parallel (0 = number of cores)")->capture_default_str();
  paper->add_flag("--quick", camp->quick, "A small subset, for a smoke run");
  paper->add_option("--seed", camp->seed, "Seed of the platforms")->capture_default_str();
  add_task_sizes_option(*paper, camp->task_sizes);
  out.push_back({paper, [camp] {
                   auto c = *camp;
                   const bool paper_sizes = c.task_sizes == tools::GenOptions::TaskSizes::paper_matrices;
                   c.command = "treefarm experiment paper --out " + c.out_dir + " --jobs " + std::to_string(c.jobs) +
                               (c.quick ? " --quick" : "") + (paper_sizes ? " --task-sizes paper" : "");
                   // SIGINT/SIGTERM: no new simulation, the running ones ended, what finished written.
                   const int rc = tools::paper_campaign(c.quick ? tools::quick_subset(c) : c, std::cout, &interrupted());
                   return rc == 130 ? 128 + interrupt_signal() : rc;
                 }});

  auto pc = std::make_shared<tools::PriceCampaignOptions>();
  auto scaled = std::make_shared<double>(1.0);
  auto* price = experiment_cmd->add_subcommand(
      "price", "papers/bertin2008: the price policy's agents on random trees from gen-platform, beside the Ipopt optimum");
  price->add_option("--trees", pc->trees, "Random trees")->capture_default_str();
  price->add_option("--min-nodes", pc->min_nodes, "Fewest nodes of a tree")->capture_default_str();
  price->add_option("--max-nodes", pc->max_nodes, "Most nodes of a tree")->capture_default_str();
  price->add_option("--max-degree", pc->max_degree, "Most children of a node")->capture_default_str();
  price->add_option("--apps", pc->apps, "Applications")->capture_default_str();
  price->add_option("--iterations", pc->iterations, "Iteration budget per tree")->capture_default_str();
  price->add_option("--seed", pc->seed, "Seed of the trees")->capture_default_str();
  price->add_option("--comm-model", pc->comm_model, "multi-port or one-port")
      ->check(CLI::IsMember({"multi-port", "one-port"}))->capture_default_str();
  price->add_option("--scaled", *scaled, "1: eq. 17-18 (default), 0: eq. 14-15")->capture_default_str();
  auto unit = std::make_shared<double>(0.0);
  price->add_option("--rate-unit", *unit, "rate_unit of every tree (0 = per tree, auto_rate_unit: docs/results/price.md)")
      ->capture_default_str();
  auto sets = std::make_shared<std::vector<std::string>>();
  price->add_option("--set", *sets, "KEY=VALUE: any [policy.price] option of every tree (repeatable; docs/policies.md#price)");
  price->add_flag("--cascade", pc->cascade, "Deliver in the same iteration what a message makes a node send");
  price->add_option("--out", pc->out_dir, "Output directory (price-campaign.md, price-campaign.csv)")->capture_default_str();
  out.push_back({price, [pc, scaled, unit, sets] {
                   auto c = *pc;
                   c.options["scaled"] = *scaled;
                   if (*unit > 0) c.options["rate_unit"] = *unit;
                   std::string set_args;
                   for (const auto& kv : *sets) {
                     const auto eq = kv.find('=');
                     double v = 0;
                     try {
                       if (eq == std::string::npos) throw std::invalid_argument(kv);
                       std::size_t used = 0;
                       v = std::stod(kv.substr(eq + 1), &used);
                       if (used != kv.size() - eq - 1) throw std::invalid_argument(kv);
                     } catch (const std::exception&) {
                       throw cli_support::UsageError("--set: expected KEY=NUMBER, got '" + kv + "'");
                     }
                     c.options[kv.substr(0, eq)] = v;
                     set_args += " --set " + kv;
                   }
                   try {
                     (void)core::PriceParams::from_options(c.options);  // names a bad key before any tree runs
                   } catch (const std::invalid_argument& e) {
                     throw cli_support::UsageError(std::string("--set: ") + e.what());
                   }
                   c.command = "treefarm experiment price --trees " + std::to_string(c.trees) + " --min-nodes " +
                               std::to_string(c.min_nodes) + " --max-nodes " + std::to_string(c.max_nodes) +
                               " --max-degree " + std::to_string(c.max_degree) + " --apps " + std::to_string(c.apps) +
                               " --iterations " + std::to_string(c.iterations) + " --seed " + std::to_string(c.seed) +
                               " --comm-model " + c.comm_model + " --scaled " + std::to_string(static_cast<int>(*scaled)) +
                               (*unit > 0 ? " --rate-unit " + std::to_string(*unit) : std::string()) +
                               set_args + (c.cascade ? " --cascade" : "") + " --out " + c.out_dir;
                   return tools::price_campaign(c, std::cout);
                 }});
}

}  // namespace treefarm::cli
