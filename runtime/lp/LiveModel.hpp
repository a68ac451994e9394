#pragma once
/// @file LiveModel.hpp
/// The root's current platform model during a run (docs/live-model.md): the LP's model
/// the run started from (calibrated, or as the experiment declares it) with the figures
/// the nodes' online estimates have moved, the LP solution that goes with it, and each
/// re-plan made so far.
///
/// A re-plan is made when a node's shift test declares a change of a task time (its
/// Estimate's `shifts` rose since the last report) to a level that differs from the
/// model's by more than `min_change` (relative) — or, once per shift, when that figure's
/// estimate has since settled (at least `settle_samples` samples after the shift) more
/// than `min_change` away from the model's value — at least `min_gap` seconds after the
/// previous re-plan: the LP (papers/beaumont2006 §3.1, LP (3)) is solved again with that
/// figure and the lp policy follows the new rates (§4.1) from then on — the rates
/// recomputed "to cope with potential availability variations" as §4.5 does for its own.
/// Hysteresis comes from the shift test (a deviation within its drift never accumulates),
/// from min_change and from the one follow-up per shift: a steady platform does not
/// re-plan back and forth, whatever its estimates' jitter between shifts.

#include <optional>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::lp {

/// One re-plan, as results.json's `replans` keeps it.
struct Replan {
  double at = 0;             ///< seconds since the run started
  std::string cause;         ///< what triggered it ("shift test")
  std::string node;          ///< the node whose figure moved
  std::string figure;        ///< which figure ("task_seconds of 'mm'")
  double old_value = 0;      ///< the figure in the model before (seconds)
  double new_value = 0;      ///< the figure's new estimate (seconds)
  double old_optimum = 0;    ///< the LP's fair throughput before, tasks/s per unit of weight
  double new_optimum = 0;    ///< and after
};
nlohmann::json to_json(const Replan& r);

struct LiveModelOptions {
  double min_change = 0.2;   ///< relative change of a figure that is worth a re-plan
  double min_gap = 5;        ///< seconds between two re-plans
  std::uint32_t settle_samples = 5;  ///< samples after a shift before its figure counts as settled
};

/// The model of the platform as a run observed it (the a-posteriori prediction,
/// docs/live-model.md): `model` with each node's task seconds of each application taken
/// from `seconds` where given — except on a host several nodes share, whose figures are
/// measured with the calibration's sharing and through the runtime and are not a kernel's
/// run time; a node alone on its host takes its figure and scales the host's whole cost
/// per task by the same factor — and each link the model bounds
/// (finite bandwidth) taken from `bandwidth` where given. Figures not observed stay.
PlatformModel observed_model(PlatformModel model, const MeasuredSeconds& seconds, const MeasuredBandwidth& bandwidth);

/// Each node's rates in `solution` as Welcome hints (alpha, received), by node name: what
/// a plan made during the run hands the root's policy (RootSetup::on_estimates).
std::vector<net::msg::NodeHint> plan_hints(const PlatformModel& model, const Solution& solution);

/// Whether `ex` re-plans: policy lp with `[policy.lp] replan = 1`.
inline bool replans(const model::Experiment& ex) {
  if (ex.run.policy != "lp") return false;
  const auto it = ex.run.policy_options.find("lp");
  if (it == ex.run.policy_options.end()) return false;
  const auto r = it->second.find("replan");
  return r != it->second.end() && r->second == 1;
}

class LiveModel {
 public:
  LiveModel(PlatformModel model, Solution solution, LiveModelOptions options = {});

  /// The tree's estimates at `at` seconds since the start. A Replan when they made one
  /// (model(), solution() and hints() are then the new ones).
  std::optional<Replan> update(const std::vector<net::msg::Estimate>& estimates, double at);

  const PlatformModel& model() const { return model_; }
  const Solution& solution() const { return solution_; }
  const std::vector<Replan>& replans() const { return replans_; }
  /// Each node's rates in the current solution as Welcome hints (alpha, received).
  std::vector<net::msg::NodeHint> hints() const { return plan_hints(model_, solution_); }
  /// The latest estimate of every figure reported so far (for a-posteriori predictions).
  const std::vector<net::msg::Estimate>& latest() const { return latest_list_; }

 private:
  int index_of(const std::string& node) const;

  PlatformModel model_;
  Solution solution_;
  LiveModelOptions options_;
  std::vector<Replan> replans_;
  std::optional<double> last_at_;
  /// What the root knows of one figure's shift test (a node's task time of one app).
  struct Figure {
    std::uint32_t shifts = 0;       ///< shifts seen in the reports so far
    std::uint32_t at_shift = 0;     ///< the estimate's samples when the last shift was seen
    bool follow = false;            ///< the last shift's settled level is still to be looked at
  };
  /// Per (node index, app).
  std::vector<std::vector<Figure>> figures_;
  std::vector<net::msg::Estimate> latest_list_;
};

}  // namespace treefarm::lp
