#include "lab/price/PriceCampaign.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>

#include "tools/simulate/GenPlatform.hpp"
#include "tools/simulate/PriceTrace.hpp"

namespace treefarm::lab::price {

namespace {

std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

}  // namespace

double auto_rate_unit(const lp::PlatformModel& model) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t u = 0; u < model.nodes.size(); ++u)
    for (std::size_t k = 0; k < model.apps.size(); ++k) {
      if (!model.can_run(u, k)) continue;
      double r = model.nodes[u].cores / model.apps[k].cores_per_task / model.nodes[u].task_seconds[k];
      if (std::isfinite(model.nodes[u].link_bandwidth) && model.apps[k].bytes > 0)
        r = std::min(r, model.nodes[u].link_bandwidth / model.apps[k].bytes);
      sum += r;
      ++n;
    }
  return n > 0 && sum > 0 ? sum / static_cast<double>(n) / 5000.0 : 1.0;
}

int price_campaign(const PriceCampaignOptions& o, std::ostream& progress) {
  namespace fs = std::filesystem;
  if (o.trees == 0 || o.min_nodes < 2 || o.max_nodes < o.min_nodes || o.iterations == 0)
    throw std::invalid_argument("campaign price: need --trees >= 1, 2 <= --min-nodes <= --max-nodes, --iterations >= 1");
  fs::create_directories(o.out_dir);
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<std::uint32_t> size(o.min_nodes, o.max_nodes);
  std::ofstream csv(fs::path(o.out_dir) / "price-campaign.csv");
  csv << "tree,nodes,seed,optimum,efficiency_final,overload_final,first_99,settled_95,settled_99,settled_995\n";
  struct Row {
    std::uint32_t nodes;
    double eff;
    std::optional<std::uint64_t> s95, s99, s995;
  };
  std::vector<Row> rows;
  std::uint32_t failed = 0;
  for (std::uint32_t t = 0; t < o.trees; ++t) {
    simulate::GenOptions g;
    g.nodes = size(rng);
    g.max_degree = o.max_degree;
    g.apps = o.apps;
    g.seed = rng() % 1000000007ULL;  // the [run] seed of the file must fit a TOML integer
    auto ex = model::parse_experiment(simulate::generate_platform(g), "gen-platform");
    ex.run.comm_model = o.comm_model == "one-port" ? model::CommModel::one_port : model::CommModel::multi_port;
    const auto model = lp::model_from_experiment(ex);
    simulate::PriceTrace trace;
    try {
      auto options = o.options;
      if (!options.contains("rate_unit")) options["rate_unit"] = auto_rate_unit(model);
      trace = simulate::run_price_trace(model, ex, options, o.iterations, o.cascade);
    } catch (const std::runtime_error& e) {
      progress << "tree " << t << " (" << g.nodes << " nodes, seed " << g.seed << "): skipped: " << e.what() << "\n";
      ++failed;
      continue;
    }
    const auto& last = trace.rows.back();
    Row r{g.nodes, last.efficiency, trace.settled_at(0.95), trace.settled_at(0.99), trace.settled_at(0.995)};
    auto opt = [](const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : std::string(""); };
    csv << t << "," << g.nodes << "," << g.seed << "," << fmt(trace.optimum.value) << "," << fmt(last.efficiency) << ","
        << fmt(last.overload) << "," << opt(trace.first_at(0.99)) << "," << opt(r.s95) << "," << opt(r.s99) << ","
        << opt(r.s995) << "\n";
    progress << "tree " << t << ": " << g.nodes << " nodes, efficiency " << fmt(last.efficiency) << " after "
             << o.iterations << " iterations, within 1% from " << (r.s99 ? std::to_string(*r.s99) : "never") << "\n";
    rows.push_back(r);
  }
  auto count_within = [&](double f) {
    return std::count_if(rows.begin(), rows.end(), [&](const Row& r) { return r.eff >= f; });
  };
  auto median_settled = [&](auto member) {
    std::vector<std::uint64_t> v;
    for (const auto& r : rows)
      if (r.*member) v.push_back(*(r.*member));
    if (v.empty()) return std::string("–");
    std::sort(v.begin(), v.end());
    return std::to_string(v[v.size() / 2]) + " (max " + std::to_string(v.back()) + ", " + std::to_string(v.size()) + " trees)";
  };
  std::ofstream md(fs::path(o.out_dir) / "price-campaign.md");
  md << "# price policy on random trees\n\nCommand: `" << o.command << "`\n\n";
  md << "| trees | within 5% | within 1% | within 0.5% | settled within 5% at (median) | within 1% at | within 0.5% at |\n";
  md << "|---|---|---|---|---|---|---|\n";
  md << "| " << rows.size() << " | " << count_within(0.95) << " | " << count_within(0.99) << " | " << count_within(0.995)
     << " | " << median_settled(&Row::s95) << " | " << median_settled(&Row::s99) << " | " << median_settled(&Row::s995)
     << " |\n\n";
  md << "Efficiency of the feasible allocation after " << o.iterations << " iterations (see tools/simulate/PriceTrace.hpp); " << failed
     << " trees skipped (Ipopt failed). Per tree: price-campaign.csv.\n";
  progress << rows.size() << " trees: " << count_within(0.99) << " within 1% of the optimum after " << o.iterations
           << " iterations, " << count_within(0.95) << " within 5%\n";
  return 0;
}

}  // namespace treefarm::lab::price
