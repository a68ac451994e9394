#pragma once
/// @file BagExperiment.hpp
/// The experiment `treefarm submit` and `treefarm run --local` build from their command
/// line when no experiment file is given (docs/command-tasks.md, "Without a file"): one
/// command application with a task per line, per file or per number.

#include <cstdint>
#include <string>
#include <vector>

namespace treefarm::tools {

/// The command line's description of a bag.
struct BagSpec {
  std::string each_line;     ///< --each-line FILE: a task per line
  bool csv = false;          ///< --csv: FILE is CSV with a header
  std::string inputs;        ///< --inputs GLOB: a task per file
  std::string array;         ///< --array RANGE: a task per number
  std::uint32_t cores = 1;   ///< --cores N: cores per task
  std::string output_file;   ///< --output-file NAME: each output sent back as OUT/outputs/APP/NAME
  std::uint32_t max_retries = 0;
  double timeout = 0;        ///< seconds per task (0: no limit)
  std::string name = "bag";  ///< the application's name
  std::vector<std::string> argv;  ///< the program and its arguments
};

/// Whether any option that describes a bag without a file was given.
bool has_bag_options(const BagSpec& spec);

/// The experiment as TOML text. `local_cores` > 0: with a tree of one node that computes
/// with this many cores (run --local); 0: no [[node]] table (a served tree runs it as it
/// is). Throws std::invalid_argument unless exactly one of each_line, inputs, array is
/// given and argv names a program.
std::string bag_experiment_text(const BagSpec& spec, unsigned local_cores);

}  // namespace treefarm::tools
