#pragma once
/// @file PredictionInterval.hpp
/// The interval a calibrated prediction carries: the LP optimum solved again
/// with every measured figure at the pessimistic and at the optimistic end of its own
/// spread. Links: the slowest and the fastest of their probe rounds
/// (NodeCalibration::link_bandwidth_min/max; a fastest round too fast to resolve is an
/// unconstrained link); hosts: the CPU cost of a byte at median·(1 ± spread/2), each
/// application's whole-task cost at (1 ± task_cpu_spread/2), divided at the pessimistic end
/// by 1 − task_cpu_dip as well (the dips a next span may see widen the low end only). Task
/// durations are medians of their repetitions with no spread recorded, so they stay.
/// Links within one host, which the median and optimistic solutions bound by their
/// fastest round (the host's CPU row charges the rest), bind at their slowest round at the
/// pessimistic end (model_from_calibration's same_host_links_bind).
/// The LP optimum is monotone in each of these figures, so the two solutions bound
/// every mix of them.

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"

namespace treefarm::lp {

struct PredictionInterval {
  double low = 0;     ///< tasks/s per unit of weight: every figure at its worst.
  double median = 0;  ///< tasks/s per unit of weight: the calibration as recorded.
  double high = 0;    ///< tasks/s per unit of weight: every figure at its best.
  /// False when the calibration records no spread at all (files written before issue
  /// 21's repeated probes): low == median == high then says nothing.
  bool has_spread = false;
};

/// The calibration with every spread figure at one end: `optimistic` = fastest links,
/// cheapest bytes; else slowest links, dearest bytes.
model::Calibration calibration_at_end(model::Calibration calibration, bool optimistic);

/// Solves the max-min LP for the calibration at both ends and as recorded; with
/// `pooled_inputs` (no input generated per task) every host's input cost is 0 in all three,
/// as the master's own prediction sets it. Throws as model_from_calibration() does.
PredictionInterval prediction_interval(const model::Experiment& experiment, const model::Calibration& calibration,
                                       bool pooled_inputs = false);

}  // namespace treefarm::lp
