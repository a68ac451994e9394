// --task-sizes, shared by `gen-platform` and `experiment paper` (docs/commands.md).
#pragma once
#include <CLI/CLI.hpp>

#include "tools/sim/GenPlatform.hpp"

namespace treefarm::cli {

/// --task-sizes same-work|paper into GenOptions::TaskSizes (defined in GenPlatformCommand.cpp).
void add_task_sizes_option(CLI::App& cmd, tools::GenOptions::TaskSizes& sizes);

}  // namespace treefarm::cli
