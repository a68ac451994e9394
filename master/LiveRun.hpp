#pragma once
/// @file LiveRun.hpp
/// The root's live model of a run (docs/live-model.md): it collects the tree's online
/// estimates (RootSetup::on_estimates), re-plans under policy lp when a node's task time
/// moved (lp::LiveModel: the LP solved again, the new rates followed in place), records
/// each re-plan in results.json's `replans`, the log and the progress output, and at the
/// end sets the a-posteriori prediction: the LP over the rates the run observed in its
/// steady window. A run under policy lp without a calibration makes its first plan here
/// (calibrate as you go, lp::EstimatePlan): it starts with FCFS and, once the estimates are
/// tight, the LP over them becomes the plan the lp policy follows and the run's prediction.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "master/RootPlan.hpp"
#include "master/RunRecord.hpp"
#include "runtime/lp/EstimatePlan.hpp"
#include "master/TreeCpu.hpp"
#include "runtime/lp/LiveModel.hpp"
#include "runtime/lp/RunInterval.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/node/RootRole.hpp"

namespace treefarm::master {

class LiveRun {
 public:
  /// `prediction`: the calibrated model and its solution (none: the run was not
  /// calibrated). Re-plans only under policy lp with a prediction. `one_machine`: every
  /// node runs on the root's machine (its root listens on loopback: `treefarm run`).
  /// `heartbeat_seconds`: how often the nodes' CPU samples come (the heartbeat interval).
  LiveRun(const model::Experiment& ex, std::optional<Prediction> prediction, bool one_machine = false,
          double heartbeat_seconds = 1.0);

  /// Calibrate as you go: no calibration, policy lp. The first plan comes from the run's
  /// own estimates once they are tight (`[policy.lp]` plan_ci, plan_samples, plan_wait);
  /// `hosts`: a calibration holding only the machines nodes share (what `treefarm run`
  /// writes, tools::local_host_only) — the model's host rows, filled with the estimates —
  /// or none (every node alone, the experiment's declared figures where none is estimated).
  /// `pooled_inputs`: no input is generated per task.
  void plan_from_estimates(std::optional<model::Calibration> hosts, bool pooled_inputs);
  bool predicted() const { return prediction_.has_value(); }

  /// Sets RootSetup::on_estimates; `record` gets the re-plans and, at its end, the
  /// a-posteriori prediction. Both must outlive the run.
  void install(node::RootSetup& root, RunRecord& record);

  /// The a-posteriori prediction of finished, computed results (docs/live-model.md); when
  /// its model lacks a figure it needs, no prediction and results.a_posteriori {"reason"}.
  void a_posteriori(metrics::RunResults& results) const;

 private:
  /// The first plan from the estimates, when they are tight now: its hints, recorded as
  /// the run's prediction.
  std::optional<std::vector<net::msg::NodeHint>> first_plan(const std::vector<net::msg::Estimate>& estimates,
                                                            double at, RunRecord& record);
  /// Why `model` cannot describe this run: on one machine, a node outside the root's
  /// host row (a model with no hosts: no calibration). None when it can.
  std::optional<std::string> lacks_host(const lp::PlatformModel& model) const;
  /// On a host the root shares with other nodes (a tree on one machine): `model` as that
  /// host really ran over the steady window [lo, hi] (lp::observed_host_model), its
  /// figures into results.a_posteriori. Throws, saying why, when the CPU samples do not
  /// cover the window (std::runtime_error) or a figure is missing (std::invalid_argument).
  lp::PlatformModel observed_host(lp::PlatformModel model, metrics::RunResults& results, double lo, double hi) const;
  /// Once the run's own figures are tight (lp::run_interval): the interval of the
  /// prediction from them, into `results`, the log and the progress output.
  void estimate_interval(double at, metrics::RunResults& results);
  /// The interval of `model` from the run's figures over [lo, hi] seconds (results'
  /// clock; lp::run_interval): on the machine the root shares, cut into windows (not
  /// before there are enough of them); its `model` observed through them.
  lp::RunInterval host_interval(const lp::PlatformModel& model, double lo, double hi,
                                const metrics::RunResults& results) const;
  /// The span of the run seen at `at` (results' clock) that its figures are judged over:
  /// from after the start (its first tenth, at least a heartbeat, and after `after`) to a
  /// heartbeat before now, so that every node's CPU sample reaches it.
  std::pair<double, double> seen_span(double at, double after) const;
  /// `interval`, judged at `at` over [lo, hi]: why it is loose, or, tight, into `results`,
  /// the log and the progress output (once).
  void record_interval(const lp::RunInterval& interval, double at, double lo, double hi, metrics::RunResults& results);
  /// Calibrate as you go on a machine the nodes share (lp::EstimatePlan::follow_host): the
  /// plan's model is `built` as the machine ran so far, ready when host_interval is tight,
  /// which is then the run's interval from its estimates.
  lp::EstimatePlan::HostModel host_plan(const lp::PlatformModel& built);

  const model::Experiment& ex_;
  std::optional<lp::EstimatePlan> warmup_;
  std::optional<Prediction> prediction_;
  std::optional<lp::LiveModel> live_;
  std::vector<net::msg::Estimate> latest_;
  /// The tree's process CPU and the machine's idle time over the run (results' clock).
  TreeCpu cpu_;
  /// The machine's CPU limit for the tree: its cgroup's quota, if any (CPUs).
  std::optional<double> cpu_limit_;
  bool one_machine_ = false;
  double heartbeat_ = 1.0;  ///< seconds between the nodes' CPU samples
  double clock_ = 0;    ///< results' clock at the latest estimates
  double plan_at_ = 0;  ///< results' clock: when the plan from the estimates was made (0: calibrated)
  RunRecord* record_ = nullptr;  ///< the run's record (install)
  lp::RunIntervalOptions interval_options_;
  bool interval_made_ = false;
  std::vector<std::string> interval_loose_;  ///< why there is no interval yet
  std::string interval_figures_;             ///< its figures at the last look, for the log
};

}  // namespace treefarm::master
