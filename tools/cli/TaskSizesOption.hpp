// --task-sizes, shared by `treefarm gen-platform` and `treefarm-lab campaign paper` (docs/commands.md).
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "tools/simulate/GenPlatform.hpp"

namespace treefarm::cli {

/// --task-sizes same-work|paper into GenOptions::TaskSizes.
inline void add_task_sizes_option(CLI::App& cmd, simulate::GenOptions::TaskSizes& sizes) {
  cmd.add_option_function<std::string>(
         "--task-sizes",
         [&sizes](const std::string& v) {
           sizes = v == "paper" ? simulate::GenOptions::TaskSizes::paper_matrices
                                : simulate::GenOptions::TaskSizes::same_work;
         },
         "same-work (default): 1e9 flop per task, the CCR sets the bytes; paper: 3500x3500 matrices (98 MB) per task, "
         "the CCR sets the flop (beaumont2006 section 5.1.3)")
      ->check(CLI::IsMember({"same-work", "paper"}));
}

}  // namespace treefarm::cli
