#pragma once
/// @file Calibration.hpp
/// Measured platform parameters (`treefarm calibrate`), stored as JSON next to an
/// experiment file. Format: docs/experiment-file.md, section "Calibration file".

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/Application.hpp"

namespace treefarm::model {

struct Experiment;

/// What was measured on one node.
struct NodeCalibration {
  /// Seconds one task of an application takes on one slot of this node, by app name
  /// (measured, so it already includes the kernel's real rate on this node). Each > 0.
  std::map<std::string, double> task_seconds;
  /// bytes of output one task writes on this node, by app name, for the applications
  /// that send their outputs back up the tree (`output_file`): the mean over
  /// the calibration runs. Each >= 0.
  std::map<std::string, double> output_bytes{};
  /// bytes/s of the link from the parent, measured (absent for the master or if not
  /// measured). > 0.
  std::optional<double> link_bandwidth;
  /// bytes/s: the slowest and the fastest of the link's probe rounds, link_bandwidth
  /// being their median (absent: one round, or a round too fast to resolve). The
  /// prediction interval of `treefarm predict` comes from them.
  std::optional<double> link_bandwidth_min, link_bandwidth_max;
  /// seconds: the round trip of a 1-byte message over the link from the parent (median
  /// over the probe rounds, >= 0); what bounds a child's rate with a finite buffer
  /// (docs/lp.md, "Latency").
  std::optional<double> link_round_trip;
  /// bytes/s this node sends to all its children together, measured by probing them at
  /// once (nodes with two or more children): the cap of the bounded multi-port model.
  std::optional<double> out_bandwidth;
  /// Cores the node really computes with.
  std::uint32_t cores = 0;
  /// Name of the node's parent in the calibrated tree ("" for the master, or unknown in a
  /// file written before this field existed). What lets a served tree's calibration give
  /// the tree's shape to the LP (docs/serve.md, "Calibration and the lp policy").
  std::string parent{};
  /// Name of the host (in Calibration::hosts) the node ran on; "" = unknown.
  std::string host{};
  /// CPUs its executor was pinned to (empty = unknown).
  std::vector<int> cpus{};
  /// Fraction of those CPUs' time the node had while task_seconds was measured (all
  /// nodes measure at once; on shared CPUs each gets a share), in (0, 1].
  double cpu_share = 1.0;

  bool operator==(const NodeCalibration&) const = default;
};

/// What an application was when it was calibrated: a duration measured for one kernel
/// and size says nothing about another.
struct AppSignature {
  std::string kernel;                ///< "matmul", "matadd", "noop", "abstract".
  std::uint32_t n = 0;               ///< Matrix order (matmul, matadd).
  std::uint64_t bytes = 0;           ///< bytes sent down the tree per task.
  std::uint32_t cores_per_task = 1;  ///< Cores a task held while it was measured.

  bool operator==(const AppSignature&) const = default;
};

/// The signature of an application of an experiment.
AppSignature signature_of(const AppSpec& app);

/// A machine that several nodes of the tree share.
struct HostCalibration {
  double cores = 0;  ///< CPUs the nodes on it may use (> 0).
  /// CPU seconds (sender and receiver together) one byte costs to move between two
  /// processes of this host over the tree's transport (loopback TCP, CURVE when
  /// encrypted), measured; >= 0.
  double comm_cpu_seconds_per_byte = 0;
  /// Spread of that figure over the repetitions of its measurement: (max - min) / median.
  double comm_cpu_spread = 0;
  /// CPU seconds an application's origin (the master) spends per byte of a task's input
  /// it generates (a fresh secret input per task, tasks/Payload.hpp), measured on cold
  /// buffers; >= 0 (0: not measured). Charged on the origin's host per task (docs/lp.md,
  /// "Hosts").
  double input_cpu_seconds_per_byte = 0;
  /// CPU seconds per byte of a task's input spent at the node that computes it, beyond
  /// the move itself: receiving it into fresh memory, handing it to the executor,
  /// releasing it — measured through the runtime (a master and a worker of this host
  /// moving no-op tasks), minus the move and the generation; >= 0 (0: not measured).
  /// Charged on the computing node's host per task.
  double receive_cpu_seconds_per_byte = 0;
  /// Per application (by name): CPU seconds one task costs this host as a whole when
  /// a master and one-core workers of this host run the application's real tasks — the
  /// input's generation, its move over one hop, its reception, the kernel, the result's
  /// way back and check, the wake-ups and scheduling around them — measured through the
  /// runtime under a run's load (tools/HostCalibration). Charged per task a
  /// node of this host computes, in place of the term-by-term costs (docs/lp.md,
  /// "Hosts"). Empty: not measured.
  std::map<std::string, double> task_cpu_seconds = {};
  /// Relative width of the 95 % prediction interval of each of those (the rate of the run
  /// they come from over a next span: tools/SteadyRate's band); the prediction interval
  /// scales the cost by 1 ± half of it.
  std::map<std::string, double> task_cpu_spread = {};
  /// Share of a next span's work its dips may lose at the 95 % level (the windows of that
  /// run below its jitter: tools/SteadyRate's dip_band), in [0, 1); the prediction
  /// interval's pessimistic end divides the cost by 1 − this as well. Absent: none seen.
  std::map<std::string, double> task_cpu_dip = {};
  /// Share of the CPU time the tree could have had that it used while it ran the
  /// applications together at its limit (the run task_cpu_seconds come from, over its
  /// steady span): its processes' CPU / (their CPU + the machine's idle time), in (0, 1].
  /// The rest is what a saturated tree leaves idle (its processes waiting for one
  /// another), which task_cpu_seconds include; the a-posteriori model, which fits its
  /// costs to the tree's CPU only, counts the CPU available to the tree × this
  /// (docs/live-model.md). 1: not measured.
  double busy_share = 1;
  /// Whether the tree measured here moved its task inputs through shared input segments
  /// (its nodes on this host over ipc://, runtime/zmq/SharedInputs.hpp) rather than
  /// through the sockets its links' probes measured: then those probes bound nothing, not
  /// even at the prediction interval's pessimistic end (comm_cpu_seconds_per_byte is then
  /// at most what the runtime spent per byte beyond the generation).
  bool shared_inputs = false;

  bool operator==(const HostCalibration&) const = default;
};

/// A calibration of a whole experiment.
struct Calibration {
  /// Path of the experiment file that was calibrated (as given to the tool).
  std::string experiment;
  /// When it was measured: seconds since the Unix epoch (UTC).
  double measured_at = 0.0;
  /// By node name.
  std::map<std::string, NodeCalibration> nodes;
  /// By application name: what was measured (files written before this field existed
  /// have none; then only the application names are checked).
  std::map<std::string, AppSignature> apps;
  /// By host name: the machines nodes share (empty: unknown, every node alone).
  std::map<std::string, HostCalibration> hosts;

  bool operator==(const Calibration&) const = default;
};

/// A calibration that belongs to another experiment (other nodes, applications, kernels
/// or sizes). what() names every difference.
class CalibrationMismatch : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The differences between what `calibration` measured and what `experiment` declares,
/// one line each ("node 'w3' is in the experiment, not in the calibration",
/// "application 'mm': n is 384 in the experiment, 256 in the calibration", ...); empty
/// if it matches. Nodes are compared by name (both ways); applications by name, and by
/// kernel, n, bytes and cores_per_task when the calibration records them; an
/// application of the experiment must have a measured duration on some node.
std::vector<std::string> calibration_differences(const Calibration& calibration, const Experiment& experiment);

/// Throws CalibrationMismatch, naming `source` (the calibration file), the experiment it
/// was measured for and every difference, unless calibration_differences() is empty.
void check_calibration_matches(const Calibration& calibration, const Experiment& experiment,
                               const std::string& source);

/// load_calibration() then check_calibration_matches(): what every command that uses a
/// calibration for an experiment calls. Throws FileError or CalibrationMismatch.
Calibration load_calibration_for(const std::string& path, const Experiment& experiment);

/// The signatures of every application of `experiment`, by name (what a calibration of
/// it records).
std::map<std::string, AppSignature> app_signatures(const Experiment& experiment);

/// Reads and validates a calibration file. Throws FileError (see Experiment.hpp): the
/// line is known for JSON syntax errors, 0 for errors found after parsing.
Calibration load_calibration(const std::string& path);
/// Parses calibration JSON text; `path` is used in error messages. Throws FileError.
Calibration parse_calibration(const std::string& text, const std::string& path);
/// Writes `calibration` to `path` (through a temporary file renamed into place).
/// Throws std::runtime_error if the file cannot be written.
void save_calibration(const Calibration& calibration, const std::string& path);
/// The JSON text save_calibration writes (indented, nodes in name order).
std::string to_json(const Calibration& calibration);

}  // namespace treefarm::model
