#pragma once
/// @file ChaosSoak.hpp
/// `treefarm bench chaos` as root (docs/benchmarks.md, "Faults"): a 6-node tree on an
/// emulated platform (Platform: one network namespace per node) runs once without faults,
/// then under every fault at once — workers killed (SIGKILL) and restarted, network
/// faults on random links (loss, down, partition; FaultPlayer), the master killed
/// (SIGKILL) and the disk of its --out filled (a tmpfs in this process's own mount
/// namespace) — each master fault followed by `--resume` until the run completes.

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>

namespace treefarm::emulate {

struct SoakOptions {
  double minutes = 1;          ///< about how long the run without faults takes (minutes)
  double kill_interval = 3;    ///< mean seconds between worker kills
  double fault_interval = 8;   ///< mean seconds between network faults
  double master_fault_interval = 30;  ///< mean seconds of a master segment before its fault
  std::uint64_t seed = 1;
  std::string bin_dir;         ///< treefarm-master/-worker ("" = next to this executable)
};

/// What a soak measured.
struct SoakFigures {
  std::uint64_t tasks = 0, completed = 0, lost = 0, duplicates = 0, wrong = 0, distinct = 0;
  std::uint64_t worker_kills = 0, network_faults = 0, master_kills = 0, disk_full = 0, segments = 0;
  double seconds = 0, calm_seconds = 0;  ///< wall time of the chaotic run (all segments) and of the calm one
  int exit_code = -1;                    ///< the last segment's
  bool ok() const { return exit_code == 0 && lost == 0 && wrong == 0 && completed == tasks && distinct == tasks; }
};

/// Runs the soak; prints the figures (JSON with `json`) on `out` (and into `figures` if
/// given), progress on stderr. Master faults alternate: a kill (odd segments), a full
/// --out (even ones, where a private mount namespace can be made). Returns 0 if every task
/// was recorded exactly once with none lost or wrong, else 4. Throws EmulateError if not
/// root or namespaces cannot be made.
int chaos_soak(std::ostream& out, const SoakOptions& options, bool json, const std::atomic<bool>& interrupted,
               SoakFigures* figures = nullptr);

}  // namespace treefarm::emulate
