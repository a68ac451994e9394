#pragma once
/// @file FairnessOptimum.hpp
/// Fair optima of the steady-state throughput (papers/bertin2008 §2.4): maximise
/// Σ_k w(k)·U(ϱ_k/w(k)) over the rates ϱ_k (tasks/s) of the applications, under the
/// computation and communication constraints of LP (3) (beaumont2006 §3.1; one-port, or
/// the bounded multi-port model of bertin2008 §2.1), with
///   - U(ϱ) = log ϱ (proportional fairness),
///   - U(ϱ) = ϱ^(1−α)/(1−α) (α-fairness, α >= 0, α ≠ 1; α = 1 is proportional, α → ∞
///     tends to max-min fairness).
/// The priority weights w(k) enter as in weighted α-fairness: proportional maximises
/// Σ w(k)·log ϱ_k (+ a constant), and α → ∞ tends to the weighted max-min of the LP,
/// max min_k ϱ_k/w(k). With all w(k) = 1 (the paper) it is Σ_k U(ϱ_k).
/// Max-min fairness itself is the LP of SteadyState.hpp. The convex programs are solved
/// with Ipopt (interior point, exact Hessian); the paper used the SDP solver DSDP.

#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/lp/PlatformModel.hpp"

namespace treefarm::lp {

/// Which fairness an optimum maximises.
struct FairnessObjective {
  enum class Kind { max_min, proportional, alpha_fair };
  Kind kind = Kind::proportional;
  double alpha = 1.0;  ///< α of α-fairness (Kind::alpha_fair); 1 for proportional.

  /// "maxmin", "proportional", "alpha:A" (A >= 0; alpha:1 is proportional). Throws
  /// std::invalid_argument naming the text for anything else.
  static FairnessObjective parse(std::string_view text);
  /// The text parse() reads: "maxmin", "proportional", "alpha:A".
  std::string name() const;
};

/// U(ϱ) of the objective at ϱ tasks/s (−inf for log 0). Max-min has no per-application
/// utility: returns ϱ.
double utility(const FairnessObjective& objective, double rate);

/// Optimum of a fairness objective.
struct FairnessSolution {
  FairnessObjective objective;
  /// Σ_k w(k)·U(ϱ_k/w(k)) (proportional, α-fair); min_k ϱ_k/w(k) for max-min (tasks/s).
  double value = 0.0;
  std::vector<double> app_throughput;          ///< ϱ_k, tasks/s.
  std::vector<std::vector<double>> alpha;      ///< Tasks/s of k computed at u, [node][app].
  std::vector<std::vector<double>> sent;       ///< Tasks/s of k u receives, [node][app].
  std::size_t iterations = 0;                  ///< Solver iterations.
  double solve_seconds = 0.0;                  ///< Wall time in the solver.
  std::string solver;                          ///< "ipopt" or "clp".
};

/// Solver settings.
struct FairnessOptions {
  double tolerance = 1e-9;   ///< Ipopt `tol` (relative KKT error).
  int max_iterations = 3000; ///< Ipopt `max_iter`.
};

/// Solves the fairness optimum of `model`. Max-min goes to the LP (solve() of
/// SteadyState.hpp); the others to Ipopt. Throws std::invalid_argument for an invalid
/// model or objective, std::runtime_error when the solver does not converge.
FairnessSolution solve_fairness(const PlatformModel& model, const FairnessObjective& objective,
                                const FairnessOptions& options = {});

/// Σ_k w(k)·U(ϱ_k/w(k)) (or min_k ϱ_k/w(k) for max-min) of given rates (tasks/s).
double fairness_value(const PlatformModel& model, const FairnessObjective& objective,
                      const std::vector<double>& rates);

/// {"objective": value, "fairness": "proportional", "solver", "iterations",
///  "apps": [{"name", "weight", "throughput"}], "nodes": [{"name", "apps": {NAME: tasks/s}}]}.
nlohmann::json to_json(const PlatformModel& model, const FairnessSolution& solution);

/// Human-readable report for `treefarm predict --objective`.
void print_report(std::ostream& out, const PlatformModel& model, const FairnessSolution& solution);

}  // namespace treefarm::lp
