#pragma once
/// @file FaultTable.hpp
/// Reading the `[[fault]]` entries of an experiment file (docs/experiment-file.md).
/// Internal to runtime/model (toml++).

#include <toml++/toml.h>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/Fault.hpp"
#include "runtime/model/TomlReader.hpp"

namespace treefarm::model {

/// The `[[fault]]` entries of `root`, checked against `experiment`'s tree (read before),
/// sorted by `at` (stable). Throws FileError naming the file, the line and the field
/// (`fault[1].loss`).
std::vector<FaultSpec> read_faults(const TomlReader& reader, const toml::table& root, const Experiment& experiment,
                                   const std::string& path);

}  // namespace treefarm::model
