#pragma once
/// @file Origins.hpp
/// Applications from several masters (papers/bertin2008 §2.2, Figure 2; `origin` in
/// `[[app]]`): the experiment as one origin's master sees it — the tree re-rooted at that
/// node, with only the applications it hosts. `treefarm run` starts one such tree of
/// processes per origin (tools/TreeLauncher.cpp) and `treefarm-master --origin NODE` runs
/// one of them (docs/experiment-file.md, `origin`).

#include <string>
#include <vector>

#include "runtime/model/Experiment.hpp"

namespace treefarm::model {

/// The distinct origins of the experiment's applications (the master's name for an
/// application without `origin`), in the order of each one's first application.
std::vector<std::string> app_origins(const Experiment& experiment);

/// True if some application's origin is a node other than the master.
bool has_origins_below_root(const Experiment& experiment);

/// The experiment seen from `origin`'s master: its nodes breadth-first from `origin`
/// (each node's parent is its neighbour towards `origin`; a node's children are its
/// children in the file, then its old parent when that is not its new parent), each
/// link keeping its bandwidth and latency (a link crossed towards the old parent has the
/// same capacity in that direction: one capacity per direction, bertin2008 constraint
/// (3)) and its bandwidth `[[event]]`s; only the applications whose origin is `origin`,
/// their `origin` cleared. Nodes keep `listen`, cores, speed, quota and cpuset.
/// Throws std::invalid_argument if `origin` is no node or hosts no application.
Experiment rerooted(const Experiment& experiment, const std::string& origin);

}  // namespace treefarm::model
