#include "tools/simulate/PriceTrace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "runtime/core/policies/PricePolicy.hpp"
#include "tools/simulate/PriceNetwork.hpp"
#include "tools/plot/Gnuplot.hpp"

namespace treefarm::simulate {

namespace {

lp::FairnessObjective objective_of(const core::PolicyOptions& options) {
  const auto p = core::PriceParams::from_options(options);
  lp::FairnessObjective o;
  if (p.alpha == 1) {
    o.kind = lp::FairnessObjective::Kind::proportional;
  } else {
    o.kind = lp::FairnessObjective::Kind::alpha_fair;
    o.alpha = p.alpha;
  }
  return o;
}

using plot::quote;

std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

}  // namespace

std::optional<std::uint64_t> PriceTrace::settled_at(double fraction) const {
  if (rows.empty() || rows.back().efficiency < fraction) return std::nullopt;
  std::uint64_t at = rows.back().iteration;
  for (auto it = rows.rbegin(); it != rows.rend() && it->efficiency >= fraction; ++it) at = it->iteration;
  return at;
}

std::optional<std::uint64_t> PriceTrace::first_at(double fraction) const {
  for (const auto& r : rows)
    if (r.efficiency >= fraction) return r.iteration;
  return std::nullopt;
}

PriceTrace run_price_trace(const lp::PlatformModel& model, const model::Experiment& experiment,
                           const core::PolicyOptions& options, std::uint64_t iterations, bool cascade) {
  PriceTrace trace;
  const auto objective = objective_of(options);
  // bertin2008's program: no latency rows (the agents price executors and links only), so
  // the optimum is solved without the buffer's Little's-law rows (docs/lp.md "Latency").
  auto program = model;
  program.buffer = 0;
  trace.optimum = lp::solve_fairness(program, objective);
  for (const auto& a : model.apps) trace.app_names.push_back(a.name);
  double weights = 0;
  for (const auto& a : model.apps) weights += a.weight;

  PriceNetwork net(model, experiment, options);
  net.set_cascade(cascade);
  trace.price_names = net.price_names();
  for (std::uint64_t t = 1; t <= iterations; ++t) {
    net.step();
    PriceTraceRow row;
    row.iteration = t;
    row.rates = net.rates();
    row.overload = net.overload();
    row.prices = net.prices();
    row.utility = lp::fairness_value(model, objective, row.rates);
    auto feasible = row.rates;
    if (row.overload > 0)
      for (auto& r : feasible) r /= 1 + row.overload;
    row.feasible_utility = lp::fairness_value(model, objective, feasible);
    if (objective.kind == lp::FairnessObjective::Kind::proportional)
      row.efficiency = std::exp((row.feasible_utility - trace.optimum.value) / weights);
    else
      row.efficiency = row.feasible_utility / trace.optimum.value;
    if (!std::isfinite(row.efficiency)) row.efficiency = 0;
    trace.rows.push_back(std::move(row));
  }
  return trace;
}

void write_price_csv(std::ostream& out, const PriceTrace& trace) {
  out << "# optimum (ipopt, " << trace.optimum.objective.name() << "): utility " << fmt(trace.optimum.value);
  for (std::size_t k = 0; k < trace.app_names.size(); ++k)
    out << ", rho*:" << trace.app_names[k] << " " << fmt(trace.optimum.app_throughput[k]);
  out << "\n";
  out << "iteration,utility,feasible_utility,efficiency,overload";
  for (const auto& a : trace.app_names) out << ",rho:" << a;
  for (const auto& p : trace.price_names) out << "," << p;
  out << "\n";
  for (const auto& r : trace.rows) {
    out << r.iteration << "," << fmt(r.utility) << "," << fmt(r.feasible_utility) << "," << fmt(r.efficiency) << ","
        << fmt(r.overload);
    for (double v : r.rates) out << "," << fmt(v);
    for (double v : r.prices) out << "," << fmt(v);
    out << "\n";
  }
}

std::string plot_price_trace(const std::string& csv_path, const PriceTrace& trace) {
  namespace fs = std::filesystem;
  const fs::path csv(csv_path);
  fs::path png = csv;
  png.replace_extension(".png");
  fs::path script = csv;
  script.replace_extension(".gp");
  const double u = trace.optimum.value;
  const std::size_t kk = trace.app_names.size();
  std::ofstream gp(script);
  gp << "set datafile separator ','\nset terminal pngcairo size 1200,1000 font ',10'\nset output " << quote(png.string())
     << "\nset multiplot layout 3,1\nset key outside right\nset xlabel 'iteration'\n";
  // Utility, as in the paper's Figure 8, with the 95/99/99.5% lines (efficiency scale).
  gp << "set title 'utility (bertin2008 Fig. 8): optimum " << fmt(u) << "'\nset ylabel 'sum_k w_k U(rho_k/w_k)'\n";
  double weights = 0;
  for (std::size_t k = 0; k < kk; ++k) weights += trace.optimum.app_throughput.empty() ? 1 : 1;
  (void)weights;
  gp << "plot " << quote(csv.string()) << " using 1:2 with lines title 'utility', '' using 1:3 with lines title 'feasible utility', "
     << fmt(u) << " title 'optimum' dt 2\n";
  gp << "set title 'efficiency of the feasible allocation (geometric mean of rho_k/rho_k*)'\nset ylabel 'efficiency'\n"
        "set yrange [0.9:1.005]\n";
  gp << "plot " << quote(csv.string()) << " using 1:4 with lines title 'efficiency', 0.95 title '95%' dt 2, 0.99 title '99%' dt 3, 0.995 title '99.5%' dt 4\n";
  gp << "set autoscale y\nset title 'rates (Fig. 10); dashed: the optimum'\nset ylabel 'tasks/s'\nplot ";
  for (std::size_t k = 0; k < kk; ++k) {
    gp << (k ? ", " : "") << quote(csv.string()) << " using 1:" << 6 + k << " with lines lt " << k + 1 << " title 'rho " << trace.app_names[k]
       << "', " << fmt(trace.optimum.app_throughput[k]) << " lt " << k + 1 << " dt 2 notitle";
  }
  gp << "\nunset multiplot\n";
  gp.close();
  if (!gp) return "cannot write " + script.string();
  return plot::run_gnuplot(script);
}

}  // namespace treefarm::simulate
