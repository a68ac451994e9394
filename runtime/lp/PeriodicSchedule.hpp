#pragma once
/// @file PeriodicSchedule.hpp
/// An integral periodic schedule reconstructed from the LP optimum (papers/beaumont2006
/// §3.2): in every period of `period` seconds, node u computes computed[u][k] tasks of
/// application k and receives received[u][k] of them from its parent. The paper takes
/// the period as the lcm of the denominators of the rational LP solution, which can be
/// "extraordinarily large"; we bound it instead and round down (docs/lp.md):
///
///  - candidate periods are P = i·τ, τ the power of ten with max_{u,k} α_u^(k)·τ in
///    (0.1, 1], and i running over the numbers with two significant digits (1, 2, ...,
///    99, 100, 110, ..., 990, 1000, 1100, ...) while P <= max_period;
///  - for a candidate, computed[u][k] = floor(α_u^(k)·P) and received follows from
///    conservation, bottom-up: received[u][k] = computed[u][k] + Σ_{v∈Γ(u)}
///    received[v][k]. Every count is at most the LP's rate times P, so every
///    computation and communication constraint of the LP still holds per period;
///  - the schedule is the first candidate whose fair throughput min_k
///    Σ_u computed[u][k] / (w(k)·P) is within `tolerance` of the LP's; if none is, the
///    candidate with the best fair throughput, flagged within_tolerance = false.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"

namespace treefarm::lp {

struct ScheduleOptions {
  double max_period = 1e4;  ///< seconds; longest period considered.
  double tolerance = 0.01;  ///< accepted relative loss of fair throughput vs the LP.
};

struct PeriodicSchedule {
  double period = 0.0;  ///< seconds.
  /// Tasks of application k computed by node u per period, [node][app].
  std::vector<std::vector<std::uint64_t>> computed;
  /// Tasks of application k received by node u from its parent per period, [node][app]
  /// (0 for the root). §3.2 buffers twice this at u.
  std::vector<std::vector<std::uint64_t>> received;
  /// Σ_u computed[u][k]: tasks of application k per period.
  std::vector<std::uint64_t> app_tasks;
  /// min_k app_tasks[k] / (w(k)·period), tasks/s per unit of weight.
  double fair_throughput = 0.0;
  double lp_fair_throughput = 0.0;  ///< Solution::fair_throughput it was built from.
  /// 1 - fair_throughput / lp_fair_throughput.
  double relative_loss = 1.0;
  bool within_tolerance = false;    ///< relative_loss <= ScheduleOptions::tolerance.
};

/// Builds the periodic schedule of `solution` (an optimum of `model`) as described
/// above. Throws std::invalid_argument if the sizes of solution and model differ or the
/// options are not positive.
PeriodicSchedule periodic_schedule(const PlatformModel& model, const Solution& solution,
                                   const ScheduleOptions& options = {});

/// Result of check_schedule: feasible, or the violated constraints in words.
struct ScheduleCheck {
  bool feasible = true;
  std::vector<std::string> violations;
};

/// Checks a schedule against the model, per period: conservation at every node, nothing
/// received by the root, tasks computed only where they can run, the computation limit
/// (Σ_k computed·task_seconds·cores_per_task <= cores·period) and the communication
/// limits of the model's comm_model (one-port: Σ over children of received·b(k)/b_v <=
/// period; multi-port: per link and max_out_bandwidth), each within a relative slack of
/// `relative_slack`.
ScheduleCheck check_schedule(const PlatformModel& model, const PeriodicSchedule& schedule,
                             double relative_slack = 1e-6);

/// Text for `treefarm predict --schedule`: the period, tasks per period and throughput
/// per application, and per node the tasks computed and received per period; a warning
/// line when the schedule is not within tolerance of the LP.
void print_schedule(std::ostream& out, const PlatformModel& model, const PeriodicSchedule& schedule);

}  // namespace treefarm::lp
