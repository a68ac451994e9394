#pragma once
/// @file Emulate.hpp
/// `treefarm emulate`: runs an experiment on an emulated heterogeneous LAN built on this
/// machine (Platform: network namespaces, tbf-shaped veth links, CPU control groups), and
/// `treefarm emulate --cleanup`, which removes what a crashed run left behind.
/// See docs/emulation.md.

#include <atomic>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/Fault.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::emulate {

/// A refused or impossible emulation request (not root, unknown mode, ...).
class EmulateError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct EmulateOptions {
  /// out_dir, policy, buffer, calibration, timeout, quiet, log_level, master_args as for
  /// `treefarm run`; its wrap/listen/parent_endpoint hooks are set by emulate_command.
  tools::LaunchOptions launch;
  std::string bin_dir;       ///< Where treefarm-master/treefarm-worker are ("" = next to this executable).
  std::string prefix;        ///< Name prefix "tf" + 4 hex digits ("" = a random unused one).
  bool probe_links = false;  ///< Before the run, measure every shaped link (both ways) and print it.
  std::string calibration_out = "calibration.json";  ///< mode calibrate: the file to write.
  std::vector<std::string> policies;                 ///< mode compare: policies (empty = all).
  /// mode run: network faults beside the experiment's `[[fault]]` entries (`--fault`).
  std::vector<model::FaultSpec> faults;
};

/// Runs `treefarm emulate EXPERIMENT MODE`. MODE "run": sets up the platform, runs the
/// tree in it with launch_tree, tears it down (also on error and when `interrupted`
/// becomes true) and returns launch_tree's code (130 if interrupted during setup).
/// Network faults (the experiment's `[[fault]]`s and options.faults) are played during
/// "run" and all ended before the platform is removed; a fault that could not be made or
/// ended turns a successful run's code into 1.
/// "calibrate": calibrates in place into options.calibration_out. "compare": calibrates
/// (unless options.launch.calibration is given), runs every policy, prints the table and
/// each link's achieved bytes/s against its tbf rate (tools/Compare.hpp). Throws EmulateError
/// if not root, std::invalid_argument for an unknown mode, model::FileError for a bad
/// experiment, PlatformError if the platform cannot be built.
int emulate_command(const std::string& experiment, const std::string& mode, const EmulateOptions& options,
                    const std::atomic<bool>& interrupted);

/// `treefarm emulate --cleanup`: removes what emulated platforms whose owner process is
/// gone left behind — everything their state files list, then any namespace, veth or
/// control group named like this tool's (Platform::is_emulation_name) that no running
/// platform owns. Reports each removal on `out`. Returns 0, or 1 if something could not
/// be removed (or not root).
int emulate_cleanup(std::ostream& out);

/// Why emulation cannot run here ("" = it can): not root, or a network namespace cannot
/// be created. For tests and for a friendly early error.
std::string emulation_unavailable();

}  // namespace treefarm::emulate
