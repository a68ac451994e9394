#pragma once
/// @file ExperimentFile.hpp
/// An Experiment written back as an experiment file (TOML, docs/experiment-file.md): the
/// one way treefarm writes one (generated trees for benchmarks, planned trees, the
/// served master's copy). parse_experiment(write_experiment(e)) gives `e` again: nodes,
/// applications, run settings, policy options and events (lines and paths aside).

#include <cstdint>
#include <string>

#include "runtime/model/Experiment.hpp"

namespace treefarm::model {

/// The experiment as TOML text: `header` first as comment lines ("# ..."; none if empty),
/// then the [[node]] tables (parents before children), the [[app]] tables, [run], the
/// [policy.NAME] tables and the [[event]] tables. Values in the file's base units (flop/s,
/// bytes/s, bytes, seconds); a key at its default is left out. An experiment without
/// nodes gives a file without [[node]] tables (one that runs on a served tree).
/// Throws std::invalid_argument for a value a file cannot hold (a non-finite number).
std::string write_experiment(const Experiment& experiment, const std::string& header = "");

/// Writes write_experiment(experiment, header) to the file `path` (replaced) and reads it
/// back as load_experiment(path) does: the experiment as a launched master reads it.
/// Throws std::runtime_error naming the file if it cannot be written, FileError if what
/// was built is not a valid experiment.
Experiment save_experiment(const Experiment& experiment, const std::string& path, const std::string& header = "");

/// For experiments built in code: appends a node called `name` under `parent` (empty:
/// the master) computing with `cores` cores (0: forwards only).
void add_node(Experiment& experiment, const std::string& name, const std::string& parent, std::uint32_t cores);
/// For experiments built in code: an application of `tasks` no-op tasks of `bytes` bytes each.
AppSpec noop_app(const std::string& name, std::uint64_t bytes, std::uint64_t tasks);

/// parse_experiment for a text that may have no [[node]] tables: without them the
/// experiment has no nodes (its applications' `origin` then unchecked; an [[event]] still
/// needs its node). With them, exactly parse_experiment. Throws FileError.
Experiment parse_experiment_nodes_optional(const std::string& text, const std::string& path);
/// load_experiment for a file that may have no [[node]] tables (as above).
Experiment load_experiment_nodes_optional(const std::string& path);

}  // namespace treefarm::model
