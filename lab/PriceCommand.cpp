// treefarm-lab campaign price (docs/results/price.md).
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/LabCommands.hpp"
#include "lab/price/PriceCampaign.hpp"
#include "runtime/core/policies/PricePolicy.hpp"

namespace treefarm::lab {

void add_price_command(CLI::App& campaign, Commands& out) {
  auto pc = std::make_shared<price::PriceCampaignOptions>();
  auto scaled = std::make_shared<double>(1.0);
  auto* cmd = campaign.add_subcommand(
      "price", "papers/bertin2008: the price policy's agents on random trees from gen-platform, beside the Ipopt optimum");
  cmd->add_option("--trees", pc->trees, "Random trees")->capture_default_str();
  cmd->add_option("--min-nodes", pc->min_nodes, "Fewest nodes of a tree")->capture_default_str();
  cmd->add_option("--max-nodes", pc->max_nodes, "Most nodes of a tree")->capture_default_str();
  cmd->add_option("--max-degree", pc->max_degree, "Most children of a node")->capture_default_str();
  cmd->add_option("--apps", pc->apps, "Applications")->capture_default_str();
  cmd->add_option("--iterations", pc->iterations, "Iteration budget per tree")->capture_default_str();
  cmd->add_option("--seed", pc->seed, "Seed of the trees")->capture_default_str();
  cmd->add_option("--comm-model", pc->comm_model, "multi-port or one-port")
      ->check(CLI::IsMember({"multi-port", "one-port"}))->capture_default_str();
  cmd->add_option("--scaled", *scaled, "1: eq. 17-18 (default), 0: eq. 14-15")->capture_default_str();
  auto unit = std::make_shared<double>(0.0);
  cmd->add_option("--rate-unit", *unit, "rate_unit of every tree (0 = per tree, auto_rate_unit: docs/results/price.md)")
      ->capture_default_str();
  auto sets = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--set", *sets, "KEY=VALUE: any [policy.price] option of every tree (repeatable; docs/policies.md#price)");
  cmd->add_flag("--cascade", pc->cascade, "Deliver in the same iteration what a message makes a node send");
  cmd->add_option("--out", pc->out_dir, "Output directory (price-campaign.md, price-campaign.csv)")->capture_default_str();
  out.push_back({cmd, [pc, scaled, unit, sets] {
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
                   c.command = "treefarm-lab campaign price --trees " + std::to_string(c.trees) + " --min-nodes " +
                               std::to_string(c.min_nodes) + " --max-nodes " + std::to_string(c.max_nodes) +
                               " --max-degree " + std::to_string(c.max_degree) + " --apps " + std::to_string(c.apps) +
                               " --iterations " + std::to_string(c.iterations) + " --seed " + std::to_string(c.seed) +
                               " --comm-model " + c.comm_model + " --scaled " + std::to_string(static_cast<int>(*scaled)) +
                               (*unit > 0 ? " --rate-unit " + std::to_string(*unit) : std::string()) +
                               set_args + (c.cascade ? " --cascade" : "") + " --out " + c.out_dir;
                   return price::price_campaign(c, std::cout);
                 }});
}

}  // namespace treefarm::lab
