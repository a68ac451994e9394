#pragma once
/// @file BagKeys.hpp
/// The keys of a command application whose tasks each have their own input
/// (docs/command-tasks.md): `inputs`, `lines` with `csv`, `array`, and `max_retries`.
/// Internal to runtime/model (includes toml++).

#include <string>

#include <toml++/toml.h>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/TomlReader.hpp"

namespace treefarm::model {

/// Reads `inputs`, `lines` (+ `csv`) or `array` into a.bag (a.tasks its task count,
/// a.bytes the mean input size in bytes). False, changing nothing, when none is given.
/// Relative paths and globs resolve against the folder of `file`; with
/// options.confine_inputs they must stay inside it. Throws FileError.
bool read_bag(const TomlReader& r, const toml::table& t, const std::string& prefix, const std::string& file, AppSpec& a,
              const ParseOptions& options);

/// Checks a.output_file against the bag's placeholders (one of its task's placeholders
/// must appear; no unknown one), and that the files of an `inputs` bag give distinct
/// output names. Throws FileError on `output_file`.
void check_output_name(const TomlReader& r, const toml::table& t, const std::string& prefix, const AppSpec& a);

}  // namespace treefarm::model
