#pragma once
/// @file SteadyState.hpp
/// The optimal steady-state throughput of a platform tree: linear program (3) of
/// papers/beaumont2006 §3.1 in the one-port model, and its bounded multi-port variant
/// (papers/bertin2008 §2.1). docs/lp.md describes the LP as implemented.
///
/// Units: throughputs in tasks/s, bandwidths in bytes/s, durations in seconds,
/// utilisations as fractions in [0, 1].

#include <cstddef>
#include <iosfwd>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/lp/LpSolver.hpp"
#include "runtime/lp/PlatformModel.hpp"

namespace treefarm::lp {

/// What the LP maximizes. Only max-min weighted fairness (beaumont2006 §2.3, objective
/// (2): max min_k α(k)/w(k)) is implemented; proportional and α-fair objectives
/// (bertin2008 §2.4) are convex programs and will be added here.
enum class Objective { max_min };

/// A resource whose constraint is tight in the LP optimum.
enum class Resource {
  cpu,            ///< The node's cores (computation limit).
  link,           ///< The link from the node's parent (its bandwidth).
  port,           ///< One-port: the node's single outgoing port (all sends share it).
  out_bandwidth,  ///< Multi-port: the node's max_out_bandwidth bound.
  buffer,         ///< The node's buffer B against its request round trip (docs/lp.md, "Latency").
};

/// "cpu", "link", "port", "out_bandwidth", "buffer".
std::string_view to_string(Resource resource);

/// A resource used at (1 - 1e-6) of its capacity or more in the optimum.
struct Saturation {
  std::size_t node;
  Resource resource;
  double utilisation;
};

struct SolveOptions {
  Objective objective = Objective::max_min;
  /// A resource is listed as saturated when its utilisation is >= this fraction.
  double saturation_threshold = 1.0 - 1e-6;
};

/// Optimum of the steady-state LP.
struct Solution {
  Objective objective = Objective::max_min;
  /// max min_k α(k)/w(k), tasks/s per unit of weight.
  double fair_throughput = 0.0;
  /// α(k) = Σ_u α_u^(k), tasks/s of application k (may exceed w(k)·fair_throughput for
  /// an application that is not the bottleneck).
  std::vector<double> app_throughput;
  /// α_u^(k): tasks/s of application k computed at node u, [node][app].
  std::vector<std::vector<double>> alpha;
  /// sent_{p(u)→u}^(k): tasks/s of application k received by u from its parent,
  /// [node][app]; 0 for the root.
  std::vector<std::vector<double>> sent;
  /// Σ_k α_u^(k) · task_seconds_u^(k) · cores_per_task^(k) / cores_u, per node (0 for
  /// a node without cores).
  std::vector<double> cpu_utilisation;
  /// Σ_k sent_u^(k) · b(k) / b_u: busy fraction of the link from u's parent (0 for the
  /// root and for loopback links).
  std::vector<double> link_utilisation;
  /// Per node: one-port, Σ_{v child} (link_utilisation_v + Σ_k sent_v^(k)·port_hold_v)
  /// (busy fraction of u's out-port);
  /// multi-port, total outgoing bytes/s / max_out_bandwidth_u (0 when unbounded).
  std::vector<double> port_utilisation;
  /// Per host of PlatformModel::hosts: CPU-seconds per second its nodes' tasks and
  /// transfers use, over its cores (docs/lp.md, "Hosts").
  std::vector<double> host_utilisation;
  /// Per node: Σ_k sent_u^(k)·(request_round_trip_u + b(k)/b_u) / B, the tasks in
  /// flight to it over its buffer (0 when B or the round trip is 0; docs/lp.md "Latency").
  std::vector<double> buffer_utilisation;
  /// Tight resources, ordered by node then resource.
  std::vector<Saturation> saturated;
  double build_seconds = 0.0;   ///< Wall time building the LP.
  double solve_seconds = 0.0;   ///< Wall time in the LP solver.
  std::size_t lp_variables = 0;
  std::size_t lp_rows = 0;
};

/// Column indices of the LP variables of beaumont2006 §3.1, LP (3).
struct SteadyStateVariables {
  static constexpr std::size_t none = static_cast<std::size_t>(-1);  ///< No such column.
  std::size_t fair = none;                     ///< T = min_k α(k)/w(k), tasks/s per weight.
  std::vector<std::vector<std::size_t>> alpha; ///< α_u^(k), [node][app]; `none` if u cannot run k.
  std::vector<std::vector<std::size_t>> sent;  ///< sent_{p(u)→u}^(k), [node][app]; `none` if useless.
};

/// The constraints of LP (3) (beaumont2006 §3.1; bounded multi-port of bertin2008 §2.1
/// when model.comm_model says so) with the max-min objective: maximize T under
/// α(k) >= w(k)·T. Fills `variables` with the column of every variable. Used by solve()
/// and, with another objective, by the fairness optima (FairnessOptimum.hpp). Does not
/// validate the model.
LpProblem build_steady_state_lp(const PlatformModel& model, SteadyStateVariables& variables);
/// The terms of ϱ_k, tasks/s of application k: what its origin (PlatformModel::App::origin)
/// computes plus what it sends to its neighbours. With an origin below the root,
/// `variables.sent[u][k]` of a node u above which the origin lies is the flow u → parent.
std::vector<LpTerm> app_rate_terms(const PlatformModel& model, const SteadyStateVariables& variables, std::size_t k);

/// Solves the steady-state LP with the default solver (Clp). Throws std::invalid_argument
/// for an invalid model (see validate()) and std::runtime_error if the solver fails.
Solution solve(const PlatformModel& model, const SolveOptions& options = {});
/// Same with a given solver.
Solution solve(const PlatformModel& model, LpSolver& solver, const SolveOptions& options = {});

/// {"comm_model", "objective", "fair_throughput", "apps": [{"name", "weight",
/// "throughput"}], "nodes": [{"name", "parent", "apps": {NAME: tasks/s}, "received":
/// {NAME: tasks/s}, "cpu_utilisation", "link_utilisation", "port_utilisation",
/// "saturated": ["cpu", ...]}]}. Throughputs in tasks/s.
nlohmann::json to_json(const PlatformModel& model, const Solution& solution);

/// Human-readable tables for `treefarm predict`: fair throughput, per-application
/// throughput, per-node computed tasks/s and utilisations, saturated resources.
void print_report(std::ostream& out, const PlatformModel& model, const Solution& solution);

}  // namespace treefarm::lp
