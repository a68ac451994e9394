#pragma once
/// @file TreeToml.hpp
/// Experiment-file pieces the tests share (docs/experiment-file.md): the trees and
/// applications many tests run, written once.

#include <cstdint>
#include <string>

namespace treefarm::test_support {

/// `[[node]]` tables: a master that only forwards (cores = 0) and `workers` children
/// w1..wN under it, `cores` each.
std::string star_nodes_toml(std::uint32_t workers, std::uint32_t cores = 1);

/// `[[node]]` tables of the quickstart's tree (examples/quickstart.toml): the master
/// (cores = 0), w1 and w2 under it, w1a and w1b under w1, one core each.
std::string quickstart_nodes_toml();

/// `[[app]]` tables of the quickstart's two applications — "mm" (matmul, n = 384,
/// weight 1) and "ma" (matadd, n = 512, weight 2) — with these task counts.
std::string quickstart_apps_toml(std::uint64_t mm_tasks, std::uint64_t ma_tasks);

/// A `[run]` table: this buffer, the multi-port model, and `policy` unless empty.
std::string multiport_run_toml(std::uint32_t buffer, const std::string& policy = "");

}  // namespace treefarm::test_support
