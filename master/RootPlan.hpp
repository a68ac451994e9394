#pragma once
/// @file RootPlan.hpp
/// How an experiment becomes the root's run: the experiment as this master runs it (its
/// origin's applications, the options that override its [run] table, checked), the root
/// node's options, the Welcome every child gets, and the LP prediction beside it.

#include <optional>

#include "master/Master.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::master {

/// `ex` as this master runs it: re-rooted at options.origin (bertin2008 §2.2; `declared`
/// then gets the tree as the file declares it, which a calibration is of), with the
/// policy, buffer, one-port window, migration and balance of `options`, and every
/// application checked to be runnable. Throws model::FileError, std::invalid_argument or
/// cli_support::UsageError.
model::Experiment prepared_experiment(model::Experiment ex, const MasterOptions& options,
                                      std::optional<model::Experiment>& declared);

/// The root node's liveness settings from `options`: heartbeat interval and timeout,
/// task losses, task deadlines, acknowledgement timeout and the one-port window (the
/// served master's tree, before any experiment, starts with these).
node::NodeOptions root_liveness_options(const MasterOptions& options);

/// The root node's options: root_liveness_options() and its name, the master node's declared memory, disk and speed,
/// the run's migration, balance and one-port window. The same for an own tree and a served one (ZmqNode::run_root).
node::NodeOptions root_node_options(const model::Experiment& ex, const MasterOptions& options);

/// The Welcome every child gets and the root's policy and wait settings.
void set_welcome(node::RootSetup& root, const model::Experiment& ex, const MasterOptions& options);

/// The LP's model and solution a run starts from.
struct Prediction {
  lp::PlatformModel model;
  lp::Solution solution;
};

/// The LP prediction from options.calibration (papers/beaumont2006 §3.1, LP (3)): each
/// application's predicted throughput into `results`, each node's hints into the Welcome.
/// Returns the model and solution (none without a calibration).
std::optional<Prediction> set_prediction(node::RootSetup& root, metrics::RunResults& results, const model::Experiment& ex,
                    const model::Experiment& declared, const MasterOptions& options);

}  // namespace treefarm::master
