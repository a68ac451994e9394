// tools/cli: the options that describe a bag without an experiment file (submit, run --local;
// docs/command-tasks.md, "Without a file").
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/cli/CliSupport.hpp"
#include "tools/BagExperiment.hpp"

namespace treefarm::cli {

/// --each-line, --csv, --inputs, --array, --cores, --output-file, --max-retries,
/// --task-timeout, --name. The program and its arguments come after "--".
/// `with_inputs` false: the command has an --inputs of its own (run: secret, pooled or GLOB).
inline void add_bag_options(CLI::App& cmd, tools::BagSpec& bag, bool with_inputs = true) {
  auto* line = cmd.add_option("--each-line", bag.each_line, "Without an experiment file: a task per line of FILE ({line})");
  cmd.add_flag("--csv", bag.csv, "With --each-line: FILE is CSV with a header line; each column is a placeholder {NAME}");
  auto* array = cmd.add_option("--array", bag.array, "Without an experiment file: a task per number of RANGE (\"1-1000\", \"1-1000:10\", \"1,5,9-12\"; {index})");
  line->excludes(array);
  if (with_inputs) {
    auto* inputs = cmd.add_option("--inputs", bag.inputs, "Without an experiment file: a task per file of GLOB ({input} {name} {stem}; quote it)");
    line->excludes(inputs);
    inputs->excludes(array);
  }
  cmd.add_option("--cores", bag.cores, "Cores per task (default 1)")->check(CLI::Range(1u, 65536u));
  cmd.add_option("--output-file", bag.output_file, "Send each task's output back as OUT/outputs/NAME/FILE, e.g. '{stem}.gz'");
  cmd.add_option("--max-retries", bag.max_retries, "Run a failed task again up to N times (default 0)")->check(CLI::Range(0u, 100u));
  cmd.add_option("--task-timeout", bag.timeout, "seconds a task may run before it is killed (default 0: no limit)")->check(treefarm::cli_support::non_negative_number());
  cmd.add_option("--name", bag.name, "The application's name (default bag)");
}

/// Splits the positional arguments: with bag options (or more than one), they are the
/// program and its arguments; else the one experiment file. Throws UsageError otherwise.
inline void split_positionals(const std::vector<std::string>& args, tools::BagSpec& bag, std::string& experiment) {
  const bool bag_given = !bag.each_line.empty() || !bag.inputs.empty() || !bag.array.empty();
  if (bag_given && args.size() == 1 && std::filesystem::path(args[0]).extension() == ".toml" &&
      std::filesystem::is_regular_file(args[0]))
    throw cli_support::UsageError("--each-line, --inputs (a GLOB) and --array describe a bag without an experiment file; "
                                  "with " + args[0] + " give none of them (--inputs takes secret or pooled there)");
  if (bag_given) {
    bag.argv = args;
    if (bag.argv.empty()) throw cli_support::UsageError("no program: give it after '--', e.g. -- gzip -9 -c {input}");
    return;
  }
  if (args.size() != 1) {
    // `-- gzip -c {input} --inputs GLOB`: the words after '--' are the program's.
    std::string after;
    for (const auto& word : args)
      if (word.starts_with("--each-line") || word.starts_with("--inputs") || word.starts_with("--array")) after = word;
    throw cli_support::UsageError(
        args.empty() ? "give an experiment file, or --each-line FILE, --inputs GLOB or --array RANGE and a program after '--'"
                     : "a program after '--' needs --each-line FILE, --inputs GLOB or --array RANGE" +
                           (after.empty() ? std::string()
                                          : " before '--' (" + after + " comes after it: it is an argument of the program)"));
  }
  // The options that shape the bag's one application mean nothing beside an experiment
  // file: refused, not ignored.
  const tools::BagSpec unset;
  for (const auto& [given, option] : {std::pair{bag.csv != unset.csv, "--csv"}, {bag.cores != unset.cores, "--cores"},
                                      {bag.output_file != unset.output_file, "--output-file"},
                                      {bag.max_retries != unset.max_retries, "--max-retries"},
                                      {bag.timeout != unset.timeout, "--task-timeout"}, {bag.name != unset.name, "--name"}})
    if (given)
      throw cli_support::UsageError(std::string(option) +
                                    " shapes a bag without an experiment file (with --each-line, --inputs GLOB or --array); "
                                    "in an experiment file, set it in the [[app]] table");
  if (!std::filesystem::is_regular_file(args[0]))
    throw cli_support::UsageError("experiment: File does not exist: " + args[0]);
  experiment = args[0];
}

/// Writes the experiment built from the command line as DIR/experiment.toml.
inline std::string write_bag_experiment(const std::string& dir, const std::string& text) {
  std::filesystem::create_directories(dir);
  const auto path = (std::filesystem::path(dir) / "experiment.toml").string();
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
  return path;
}

}  // namespace treefarm::cli
