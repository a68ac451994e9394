#pragma once
/// @file ScratchDir.hpp
/// A command's scratch folder (runtime/process/ScratchDir.hpp) and its benchmark runs under
/// Ctrl-C: a tree a benchmark starts for itself stops on Ctrl-C (cli_support::interrupted())
/// and the benchmark ends with exit 130.

#include <filesystem>
#include <string>

#include "runtime/process/ScratchDir.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

using process::ScratchDir;

/// launch_tree() of a benchmark's own run, stopped by Ctrl-C; its exit code, or
/// cli_support::Interrupted ("interrupted; WHAT stopped, nothing written") once stopped.
int launch_benchmark_tree(const model::Experiment& ex, const LaunchOptions& options, const std::string& what);

}  // namespace treefarm::tools
