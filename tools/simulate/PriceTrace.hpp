#pragma once
/// @file PriceTrace.hpp
/// The convergence study of the "price" policy (papers/bertin2008 §5): its agents iterate
/// on a platform (PriceNetwork), every iteration is set beside the Ipopt optimum of the
/// same fairness (lp::solve_fairness), written as a CSV trace and plotted with gnuplot
/// (`treefarm simulate --trace`; `treefarm-lab campaign price` runs it on random trees).
///
/// Measures, per iteration t (one round of PriceNetwork):
///  - utility: Σ_k w_k·U(ϱ_k/w_k) of the allocation in force (ϱ_k = Σ_i ϱ_{i,k}), as the
///    paper plots it — it may exceed the optimum while the allocation overloads a resource;
///  - feasible utility: the same after scaling the allocation down into the constraints
///    (every rate divided by 1 + overload when overload > 0): what the platform could
///    really deliver;
///  - efficiency: exp((feasible utility − optimum)/Σ_k w_k) for proportional fairness (the
///    weighted geometric mean of ϱ_k/ϱ_k*, unit-free: 0.99 = every application 1% short
///    on average), feasible utility/optimum for α-fairness;
///  - ratio: utility/optimum, the paper's measure (meaningful when the optimum > 0).

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/Policy.hpp"
#include "runtime/lp/FairnessOptimum.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/model/Experiment.hpp"

namespace treefarm::simulate {

struct PriceTraceRow {
  std::uint64_t iteration = 0;
  double utility = 0;            ///< of the allocation in force
  double feasible_utility = 0;   ///< after scaling it into the constraints
  double efficiency = 0;         ///< see the file comment
  double overload = 0;           ///< max usage/capacity − 1 (<= 0: feasible)
  std::vector<double> rates;     ///< ϱ_k, tasks/s
  std::vector<double> prices;    ///< PriceNetwork::prices()
};

struct PriceTrace {
  lp::FairnessSolution optimum;
  std::vector<std::string> app_names;
  std::vector<std::string> price_names;
  std::vector<PriceTraceRow> rows;

  /// First iteration from which the efficiency stays >= `fraction` until the end of the
  /// trace; nullopt if the last one is below.
  std::optional<std::uint64_t> settled_at(double fraction) const;
  /// First iteration whose efficiency is >= `fraction`; nullopt if none.
  std::optional<std::uint64_t> first_at(double fraction) const;
};

/// Iterates the price agents `iterations` times on `model` with the root's options and
/// records every iteration beside the Ipopt optimum (objective from `alpha` of the
/// options: proportional for 1). Throws std::invalid_argument for bad options,
/// std::runtime_error if Ipopt fails.
PriceTrace run_price_trace(const lp::PlatformModel& model, const model::Experiment& experiment,
                           const core::PolicyOptions& options, std::uint64_t iterations, bool cascade = false);

/// The CSV: a header `iteration,utility,feasible_utility,efficiency,overload,rho:APP...,
/// PRICE...`, one row per iteration, then no footer; the optimum goes into a comment line
/// `# optimum ...` first (gnuplot and most CSV readers skip it).
void write_price_csv(std::ostream& out, const PriceTrace& trace);

/// Plots the trace next to `csv_path` (PNG, same name with .png): utility and feasible
/// utility with the optimum and its 95/99/99.5% lines, the rates beside ϱ_k*, the prices
/// (the paper's Figures 8, 10, 11). Returns "" or why not (gnuplot missing or failed).
std::string plot_price_trace(const std::string& csv_path, const PriceTrace& trace);

}  // namespace treefarm::simulate
