#pragma once
/// @file Experiment.hpp
/// An experiment: the tree of nodes, the applications and the run settings, as read
/// from an experiment file (TOML, documented in docs/experiment-file.md).

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/Migration.hpp"
#include "runtime/model/Application.hpp"

namespace treefarm::model {

/// One node of the tree. The master is the node without a parent.
struct NodeSpec {
  std::string name;
  std::optional<std::string> parent;     ///< Absent for the master.
  std::uint32_t cores = 1;               ///< Cores it computes with; 0 = forwards only.
  std::string listen;                    ///< Optional endpoint to listen on (tcp://...).
  std::optional<double> speed;           ///< flop/s per core (model platforms).
  std::optional<double> bandwidth;       ///< bytes/s of the link from its parent.
  double latency = 0.0;                  ///< seconds, link from its parent.
  std::optional<double> cpu_quota;       ///< Fraction of a core (emulation).
  std::string cpuset;                    ///< Cores it may use, "0-1" (emulation).
  /// Resources for applications' requirements (papers/lee2010 slide 19; 0 = unknown):
  /// what a simulated node has; real nodes detect theirs (these override).
  std::uint64_t memory = 0;              ///< bytes
  std::uint64_t disk = 0;                ///< bytes, free
  int line = 0;                          ///< Line of the [[node]] entry (0: unknown).
};

/// What an `[[event]]` changes ("load that changes").
enum class EventKind { cpu_quota, speed, bandwidth };

/// One `[[event]]` entry: at `at` seconds from the start of the run, node `node` changes.
/// The simulator applies it to the host or link (runtime/sim), `treefarm emulate` to the
/// node's cgroup or its link's tc rate (tools/emulate).
struct EventSpec {
  double at = 0;                 ///< seconds from the start of the run (>= 0)
  std::string node;              ///< Name of a [[node]].
  EventKind kind = EventKind::cpu_quota;
  /// New value: cpu_quota = fraction of a core; speed = flop/s per core; bandwidth =
  /// bytes/s of the link from the node's parent.
  double value = 0;
  int line = 0;                  ///< Line of the [[event]] entry (0: unknown).
};

/// "cpu_quota", "speed", "bandwidth".
const char* to_string(EventKind kind);

/// Task migration between nodes (papers/lee2010 slide 16; docs/migration.md).
using core::MigrationMode;

/// Communication model of the steady-state LP (papers/beaumont2006 §2.1, bertin2008 §2.1).
enum class CommModel { one_port, multi_port };

/// bytes. One-port over a stream transport (the ZeroMQ adapter): a small task transfer (at
/// most one_port_small_transfer bytes, and at most the window) frees the port when handed to
/// the transport, as long as the bytes of such transfers not yet acknowledged stay within
/// the window (NodeOptions::one_port_window; the LP charges the acknowledgement's round trip
/// accordingly, PlatformModel::port_hold_per_task). 1 MiB: enough for tiny tasks to keep a
/// fast link busy during an acknowledgement's round trip (64 tasks of 16 KiB; a round trip
/// of 100-300 µs on loopback), while a larger transfer still holds the port.
constexpr std::uint64_t default_one_port_window = std::uint64_t{1} << 20;
/// bytes: the largest task transfer the one-port window lets free the port at once (a
/// matmul or matadd input of order 64); a larger one holds the port until acknowledged.
constexpr std::uint64_t one_port_small_transfer = 64 * 1024;
/// bytes: the transfers of at most this size that free the port at once under a window of
/// `window` bytes (0: none).
constexpr std::uint64_t one_port_release_limit(std::uint64_t window) {
  return window < one_port_small_transfer ? window : one_port_small_transfer;
}

/// [run] table.
struct RunSpec {
  std::uint32_t buffer = 10;        ///< Buffer bound B in tasks, per node.
  std::string policy = "fcfs";      ///< Scheduling policy name.
  double epsilon = 0.1;             ///< Measurement window margin of §5.1.1.
  std::uint64_t seed = 1;           ///< Seed of the input matrices.
  CommModel comm_model = CommModel::one_port;
  std::optional<double> max_out_bandwidth;  ///< bytes/s cap per node (multi-port).
  /// Migration of waiting tasks between neighbours (`migration = "pull"` or `"push"`; lee2010).
  MigrationMode migration = MigrationMode::off;
  /// Queue balancing over that migration (`balance = "tll"` or `"mll"`; lee2010 slide 17).
  core::BalanceMode balance = core::BalanceMode::off;
  /// bytes: the one-port window of the real transport (default_one_port_window; 0 = off).
  /// Not a key of the file: `--one-port-window` of run, treefarm-master and predict sets it,
  /// so that the LP's prediction (PlatformModel::port_hold_per_task) follows the run's value.
  std::uint64_t one_port_window = default_one_port_window;
  /// `[policy.NAME]` tables: per policy name, its numeric options (e.g. the step sizes of
  /// "price", papers/bertin2008 Table 1). Only the one of `policy` is used.
  std::map<std::string, std::map<std::string, double>> policy_options;
};

/// A whole experiment. Node 0 is always the master (the parser reorders so that every
/// parent comes before its children: breadth-first from the master).
struct Experiment {
  std::string path;              ///< File it was read from ("" if from a string).
  std::vector<NodeSpec> nodes;
  std::vector<AppSpec> apps;
  RunSpec run;
  std::vector<EventSpec> events;  ///< `[[event]]` entries, sorted by `at` (stable).

  /// Index of the node called `name`, or nullopt.
  std::optional<std::size_t> node_index(const std::string& name) const;
  /// Index of the parent of node i (nullopt for the master).
  std::optional<std::size_t> parent_index(std::size_t i) const;
  /// Indices of the children of node i, in file order.
  std::vector<std::size_t> children(std::size_t i) const;
  /// Depth of node i (master = 0).
  std::size_t depth(std::size_t i) const;
  /// Total number of tasks over all applications.
  std::uint64_t total_tasks() const;
};

/// An error in an experiment or calibration file; what() reads
/// "FILE:LINE: field 'FIELD': MESSAGE".
class FileError : public std::runtime_error {
 public:
  FileError(std::string file, int line, std::string field, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  int line_;
  std::string field_;
};

/// A FileError for a task's input file that is larger than one frame (an `inputs` bag):
/// a mistake of the files, not of the text, so a client that cannot read the rest of an
/// experiment as its master will still reports it (tools/ServeClient.cpp).
class InputTooLarge : public FileError {
 public:
  using FileError::FileError;
};

/// The whole content of an input file (experiment, calibration); a FileError naming the
/// file (line 0) if it cannot be opened or read.
std::string read_input_file(const std::string& path);

/// How an experiment file is read.
struct ParseOptions {
  /// A submission to a served master (docs/serve.md): a command's `input_file` must be a
  /// relative path inside the experiment's folder (no `..`), where the files sent with the
  /// submission are; an absolute path or one leaving the folder is refused (FileError on
  /// app[i].input_file).
  bool confine_inputs = false;
};

/// Reads and validates an experiment file. Throws FileError.
Experiment load_experiment(const std::string& path, const ParseOptions& options = {});
/// Parses experiment text; `path` is used in error messages. Throws FileError.
Experiment parse_experiment(const std::string& text, const std::string& path, const ParseOptions& options = {});

/// Throws FileError (the file, the [[app]]'s line, "app[i].origin") if an application has
/// an `origin` other than the master: `what` (e.g. "treefarm run") cannot route tasks
/// from several masters yet (papers/bertin2008 §2.2; only predict and the price study can).
void require_root_origins(const Experiment& experiment, const std::string& what);

}  // namespace treefarm::model
