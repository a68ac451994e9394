#pragma once
/// @file LiveRun.hpp
/// The root's live model of a run (docs/live-model.md): it collects the tree's online
/// estimates (RootSetup::on_estimates), re-plans under policy lp when a node's task time
/// moved (lp::LiveModel: the LP solved again, the new rates followed in place), records
/// each re-plan in results.json's `replans`, the log and the progress output, and at the
/// end sets the a-posteriori prediction: the LP over the rates the run observed in its
/// steady window.

#include <optional>
#include <vector>

#include "master/RootPlan.hpp"
#include "master/RunRecord.hpp"
#include "runtime/lp/LiveModel.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/node/RootRole.hpp"

namespace treefarm::master {

class LiveRun {
 public:
  /// `prediction`: the calibrated model and its solution (none: the run was not
  /// calibrated). Re-plans only under policy lp with a prediction.
  LiveRun(const model::Experiment& ex, std::optional<Prediction> prediction);

  /// Sets RootSetup::on_estimates; `record` gets the re-plans and, at its end, the
  /// a-posteriori prediction. Both must outlive the run.
  void install(node::RootSetup& root, RunRecord& record);

  /// The a-posteriori prediction of finished, computed results (docs/live-model.md).
  void a_posteriori(metrics::RunResults& results) const;

 private:
  const model::Experiment& ex_;
  std::optional<Prediction> prediction_;
  std::optional<lp::LiveModel> live_;
  std::vector<net::msg::Estimate> latest_;
};

}  // namespace treefarm::master
