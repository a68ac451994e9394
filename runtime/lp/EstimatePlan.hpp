#pragma once
/// @file EstimatePlan.hpp
/// Calibrate as you go (docs/live-model.md, "A run without a calibration"): a run under
/// policy lp without a calibration starts at once, every node following FCFS — the
/// demand-driven rule that needs no model (papers/beaumont2006 §4.2) — while the nodes'
/// online estimates gather. Once every figure the LP needs is tight, the root builds the
/// platform model from those estimates, solves the LP (§3.1, LP (3)) and the lp policy
/// switches to its rates in place (the re-plan's mechanism, event::PlanChanged).
///
/// The tightness rule: a figure is tight when its estimate has at least `min_samples`
/// samples and the 95% confidence interval of its mean is within ±`max_half_width` of it
/// (relative): 1.96 · spread / (mean · √n) <= max_half_width, with n the samples counted
/// at most `effective_samples` (the exponentially weighted mean of a RunningEstimate,
/// weight 0.1 for the newest sample, is worth (2 − 0.1) / 0.1 = 19 samples). The figures
/// needed: the task time of every application on every node that can run it (cores >=
/// its cores_per_task) and the bandwidth of every link that is not `free` (a link within
/// one host: the host's CPU row charges its bytes, docs/lp.md "Hosts") once it has an
/// estimate at all (a link is estimated only from transfers that had it to themselves,
/// which a saturated link may never have; one never estimated keeps the model's figure).
/// After `max_wait` seconds the plan is made with the figures there are (a figure still
/// missing: the node does not run that application in the model; a link: unconstrained).
///
/// On a machine the nodes share (every node of `treefarm run`) a node's task time is its
/// kernel's wall time under the other nodes' contention, which never gets tight, and a
/// task costs the machine more CPU than its kernel (the runtime's work around it). There
/// the caller's HostCheck decides instead (EstimatePlan::follow_host): the task times need
/// one sample each, and the plan's model is the machine as the run has used it so far.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::lp {

/// The tightness rule's parameters: `[policy.lp]` keys `plan_ci`, `plan_samples` and
/// `plan_wait` (docs/live-model.md).
struct EstimatePlanOptions {
  double max_half_width = 0.05;       ///< relative half-width of the 95% CI (plan_ci)
  std::uint32_t min_samples = 10;     ///< samples of every figure (plan_samples)
  double max_wait = 30;               ///< seconds after the start: plan with what there is (plan_wait)
  double effective_samples = 19;      ///< most samples an estimate's mean is worth

  /// From an experiment's `[policy.lp]` options (absent keys keep their default).
  /// Throws std::invalid_argument for a value out of range, naming the key.
  static EstimatePlanOptions from_policy_options(const std::map<std::string, double>& options);
};

/// The relative half-width of the 95% confidence interval of `e`'s mean (+inf without
/// samples or with a mean that is not positive).
double relative_half_width(const net::msg::Estimate& e, const EstimatePlanOptions& options);

/// One figure the plan needs: a task time (`app` >= 0) or a link (`app` < 0) of `node`.
struct NeededFigure {
  std::string node;
  int app = -1;
  bool operator<(const NeededFigure& o) const { return std::tie(node, app) < std::tie(o.node, o.app); }
};

/// The figures the plan of `ex` needs: every (node, application) the node can run, and
/// every node's link but the root's and those named in `free_links`.
std::set<NeededFigure> needed_figures(const model::Experiment& ex, const std::set<std::string>& free_links);

/// The figures of `needed` not tight in `estimates`, one line each ("w1: task time of
/// 'mm': 4 of 10 samples", "w2: link: ±7.1% > ±5%"); empty: every figure is tight.
std::vector<std::string> loose_figures(const std::vector<net::msg::Estimate>& estimates,
                                       const std::set<NeededFigure>& needed, const model::Experiment& ex,
                                       const EstimatePlanOptions& options);

/// Each node's task seconds per application name and each link's bytes/s from the
/// estimates (a figure without samples is left out).
MeasuredSeconds estimated_seconds(const std::vector<net::msg::Estimate>& estimates, const model::Experiment& ex);
MeasuredBandwidth estimated_bandwidth(const std::vector<net::msg::Estimate>& estimates);

/// The plan made from the run's estimates.
struct EstimatedPlan {
  double at = 0;              ///< seconds since the run started
  bool tight = true;          ///< false: made at max_wait with figures still loose
  PlatformModel model;
  Solution solution;
};

/// The root's waiting for a plan: fed the tree's estimates, it makes the plan once when
/// they are tight (or at max_wait). `build` turns the estimated figures into the LP's
/// model (the caller's: with the hosts of the platform it knows, or as the experiment
/// declares it).
class EstimatePlan {
 public:
  using Builder = std::function<PlatformModel(const MeasuredSeconds&, const MeasuredBandwidth&)>;
  EstimatePlan(const model::Experiment& ex, std::set<std::string> free_links, Builder build,
               EstimatePlanOptions options = {});

  /// What a shared machine's check gives: the model as the machine ran so far (none: no
  /// observation yet) and why it is not tight yet (empty: tight).
  struct HostModel {
    std::optional<PlatformModel> model;
    std::vector<std::string> loose;
  };
  /// The model built from the estimates -> the check (which knows the run's clock).
  using HostCheck = std::function<HostModel(const PlatformModel& built)>;
  /// The nodes share a machine: `check` judges the plan's figures and gives its model (the
  /// built one where it gives none, at max_wait); the task times need one sample each.
  void follow_host(HostCheck check) { check_ = std::move(check); }

  /// The estimates at `at` seconds since the start: the plan when it is made now (once).
  /// Throws what `build` or the solver throws (the caller logs it and keeps FCFS).
  std::optional<EstimatedPlan> update(const std::vector<net::msg::Estimate>& estimates, double at);
  bool made() const { return made_; }
  /// What was still loose at the last update (empty when the plan was made tight).
  const std::vector<std::string>& loose() const { return loose_; }
  const EstimatePlanOptions& options() const { return options_; }
  /// The model of the figures given (the caller's builder).
  PlatformModel build(const MeasuredSeconds& seconds, const MeasuredBandwidth& bandwidth) const {
    return build_(seconds, bandwidth);
  }

 private:
  const model::Experiment& ex_;
  std::set<NeededFigure> needed_;
  Builder build_;
  HostCheck check_;
  EstimatePlanOptions options_;
  std::vector<net::msg::Estimate> latest_;  ///< the last report of every figure
  std::vector<std::string> loose_;
  bool made_ = false;
};

}  // namespace treefarm::lp
