// treefarm-lab campaign lee2010 (docs/results/migration.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>
#include <sstream>
#include <stdexcept>

#include "lab/LabCommands.hpp"
#include "lab/lee2010/LeeCampaign.hpp"

namespace treefarm::lab {

namespace {
std::vector<double> parse_list(const std::string& what, const std::string& text) {
  std::vector<double> v;
  for (const auto& item : CLI::detail::split(text, ',')) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty())
      throw cli_support::UsageError("treefarm-lab campaign lee2010: " + what + ": '" + item + "' is not a number");
    v.push_back(x);
  }
  return v;
}
}  // namespace

void add_lee2010_command(CLI::App& campaign, Commands& out) {
  struct Cli {
    lee2010::LeeCampaignOptions o;
    std::string loads = "0.5,0.7,0.9,1.1", ratios = "0.2,0.4,0.6,0.8", balance = "tll", schemes = "all";
  };
  auto c = std::make_shared<Cli>();
  auto* lee = campaign.add_subcommand(
      "lee2010", "papers/lee2010 slides 19-23: job-level simulation of Vanilla, L, LI/LIQ-PUSH/PULL and CENT on a multi-core desktop grid");
  lee->add_option("--nodes", c->o.base.nodes, "Nodes (1, 2, 4 or 8 cores each)")->capture_default_str()->check(CLI::Range(2u, 1000000u));
  lee->add_option("--jobs", c->o.base.jobs, "Job submissions (Poisson arrivals, run times uniform in 30-90 min)")->capture_default_str()->check(CLI::Range(1u, 10000000u));
  lee->add_option("--loads", c->loads, "Offered loads of the load sweep (comma-separated; lambda x E[run time] x E[cores] / cores)")->capture_default_str();
  lee->add_option("--ratio-at-loads", c->o.ratio_at_loads, "Job constraint ratio of the load sweep")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  lee->add_option("--ratios", c->ratios, "Job constraint ratios of the ratio sweep (comma-separated, each in [0, 1])")->capture_default_str();
  lee->add_option("--load-at-ratios", c->o.load_at_ratios, "Offered load of the ratio sweep")->capture_default_str()->check(CLI::PositiveNumber);
  lee->add_option("--seeds", c->o.seeds, "Grids per point (averaged)")->capture_default_str()->check(CLI::Range(1u, 1000u));
  lee->add_option("--seed", c->o.base.seed, "First seed")->capture_default_str();
  lee->add_option("--period", c->o.base.period, "Seconds between rounds of dynamic scheduling")->capture_default_str()->check(CLI::PositiveNumber);
  lee->add_option("--neighbours", c->o.base.neighbours, "Mean neighbours per node")->capture_default_str()->check(CLI::Range(2u, 1000u));
  lee->add_option("--balance", c->balance, "Queue balancing objective: tll (total local load) or mll (maximum local load)")
      ->capture_default_str()->check(CLI::IsMember({"tll", "mll"}));
  lee->add_option("--schemes", c->schemes, "all, or a comma-separated list of Vanilla, L, LI-PUSH, LI-PULL, LIQ-PUSH, LIQ-PULL, CENT")->capture_default_str();
  lee->add_option("--out", c->o.out_dir, "Output directory (lee2010.csv, lee2010.md, PNGs)")->capture_default_str();
  out.push_back({lee, [c, lee] {
                   auto o = c->o;
                   o.loads = parse_list("--loads", c->loads);
                   o.ratios = parse_list("--ratios", c->ratios);
                   for (double r : o.ratios)
                     if (r < 0 || r > 1) throw cli_support::UsageError("treefarm-lab campaign lee2010: --ratios: each in [0, 1]");
                   for (double l : o.loads)
                     if (!(l > 0)) throw cli_support::UsageError("treefarm-lab campaign lee2010: --loads: each > 0");
                   o.base.balance = c->balance == "mll" ? lee2010::LeeBalance::mll : lee2010::LeeBalance::tll;
                   if (c->schemes != "all") {
                     o.schemes.clear();
                     for (const auto& name : CLI::detail::split(c->schemes, ',')) {
                       bool found = false;
                       for (auto s : lee2010::all_lee_schemes())
                         if (name == lee2010::to_string(s)) {
                           o.schemes.push_back(s);
                           found = true;
                         }
                       if (!found) throw cli_support::UsageError("treefarm-lab campaign lee2010: --schemes: no scheme '" + name + "'");
                     }
                   }
                   std::ostringstream cmd;
                   cmd << "treefarm-lab campaign lee2010";
                   for (const auto* opt : lee->get_options())
                     if (opt->count() > 0 && opt->get_name() != "--help")
                       cmd << " " << opt->get_name() << " " << opt->as<std::string>();
                   o.command = cmd.str();
                   return lee2010::lee_campaign(o, std::cout);
                 }});
}

}  // namespace treefarm::lab
