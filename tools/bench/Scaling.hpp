#pragma once
/// @file Scaling.hpp
/// What the scaling benchmarks (bench tasks, workers, simulate, lp) share: the fitted
/// exponent of a cost against a size, the machine's load average beside every figure,
/// and one run of a whole tree on loopback with the figures its master wrote.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tools/ScratchDir.hpp"
#include "tools/TreeLauncher.hpp"
#include "tools/bench/FittedExponent.hpp"

namespace treefarm::bench {

/// The 1-minute load average of this machine (/proc/loadavg), -1 if unreadable.
double load_average();

/// The figures of one run of a tree (tools::launch_tree), read from its results.json.
struct TreeRunFigures : tools::TreeRunCounts {
  double master_cpu_seconds = 0;   ///< the master's user + system CPU, seconds, from dispatch start to the last result
  double join_seconds = 0;         ///< seconds from the master's start until every node joined
  /// bytes: the master's resident memory at its start, once every node joined, and its peak
  std::uint64_t master_rss_at_start_bytes = 0, master_rss_joined_bytes = 0, master_peak_rss_bytes = 0;
  /// bytes of those resident in shared memory (the children's input segments, RssShmem)
  std::uint64_t master_shmem_at_start_bytes = 0, master_shmem_joined_bytes = 0;
};

/// Writes `experiment_toml` to DIR/NAME.toml, runs it with `options` (out_dir DIR/NAME,
/// quiet, logs at warn, no table) and reads DIR/NAME/results.json.
TreeRunFigures run_tree(const std::filesystem::path& dir, const std::string& name, const std::string& experiment_toml,
                        tools::LaunchOptions options);

/// A fresh directory $TMPDIR/treefarm-WHAT-XXXXXX, removed when it goes. @throws std::runtime_error if it cannot be made.
tools::ScratchDir scratch_dir(const std::string& what);

}  // namespace treefarm::bench
