#pragma once
/// @file OriginLauncher.hpp
/// `treefarm run` with applications from several masters (papers/bertin2008 §2.2, Figure
/// 2; `origin` in `[[app]]`): one tree of processes per origin, all at once on this
/// machine. The tree of origin O is the experiment re-rooted at O (model::rerooted): a
/// `treefarm-master --origin O` for O's applications and one `treefarm-worker` per other
/// node, each joined to its neighbour towards O. A node is thus one process per origin,
/// on the node's cores (the processes share them, as SimGrid's per-origin drivers share a
/// host). Each master records its own applications exactly once (DIR/origin-O/results.json);
/// the launcher then writes their union, DIR/results.json, with the LP's prediction of the
/// whole platform with origins when the experiment gives speeds. docs/experiment-file.md.

#include <atomic>

#include "runtime/metrics/Results.hpp"
#include "runtime/model/Experiment.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

/// Runs every origin's tree at once; returns 0 if every master did, else the first
/// non-zero master exit code (124/130 on timeout/interrupt as launch_tree). Needs the
/// plain loopback launch: refuses (std::invalid_argument) the emulation hooks.
int launch_origins(const model::Experiment& ex, const LaunchOptions& options, const std::atomic<bool>& interrupted);

/// The union of the origins' results: tasks, failures, duplicates and wrong counts per
/// application of `ex` (matched by name), nodes with their parent in `ex`'s tree. Each
/// origin's completion times stay on its own master's clock, counted from when that
/// master started dispatching (the masters start within the time their trees take to join).
metrics::RunResults merge_origin_results(const model::Experiment& ex, const std::vector<metrics::RunResults>& parts);

}  // namespace treefarm::tools
