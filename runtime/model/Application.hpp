#pragma once
/// @file Application.hpp
/// A bag-of-tasks application of an experiment: its kernel, sizes and weight.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treefarm::model {

class BagSource;

/// The computation a task performs.
enum class Kernel {
  matmul,    ///< C = A·B, n×n doubles; input 2·n²·8 bytes, 2·n³ flop.
  matadd,    ///< C = A+B, n×n doubles; input 2·n²·8 bytes, n² flop.
  noop,      ///< A payload of `bytes` bytes and no work (measures the runtime itself).
  abstract,  ///< Only `bytes` and `flops`: for prediction and simulation, never run.
  command,   ///< The user's own program, run once per task (tasks/CommandTask.hpp;
             ///< docs/command-tasks.md). Input `bytes` per task; its duration is known
             ///< only from a calibration.
};

/// "matmul", "matadd", "noop", "abstract", "command".
std::string_view to_string(Kernel kernel);
/// Inverse of to_string; nullopt for an unknown name.
std::optional<Kernel> kernel_from_string(std::string_view name);

/// One application (bag of identical independent tasks).
struct AppSpec {
  std::string name;
  Kernel kernel = Kernel::noop;
  std::uint32_t n = 0;              ///< Matrix order (matmul, matadd).
  std::uint64_t bytes = 0;          ///< Payload bytes (noop, abstract).
  double flops = 0;                 ///< flop per task (abstract only).
  double weight = 1.0;              ///< Priority weight w(k) > 0.
  std::uint64_t tasks = 0;          ///< Number of tasks in the bag.
  std::uint32_t cores_per_task = 1; ///< Cores a task holds while it runs.
  std::uint64_t memory_per_task = 0;///< bytes of memory a task holds (0: not accounted).
  /// Multi-resource requirements (papers/lee2010 slide 19; 0 = "don't care"): a task runs
  /// only on a node with this much free disk and cores at least this fast.
  std::uint64_t disk_per_task = 0;  ///< bytes
  double min_speed = 0;             ///< flop/s per core
  int line = 0;                     ///< Line of the [[app]] entry in its file (0: unknown).
  /// Name of the node that hosts the application's master, P_{m(k)} of papers/bertin2008
  /// §2.2 (`origin` in [[app]]); empty: the tree's root. Its tasks travel from there along
  /// the tree re-rooted at that node. Only the models (predict, the price study) use it so
  /// far; run and simulate refuse an origin other than the root (require_root_origins()).
  std::string origin;

  // Kernel command only (docs/command-tasks.md).
  /// The program and its arguments; "{index}", "{input}" and "{output}" in any element are
  /// replaced by the task's index in its bag, the path of its input file and the path
  /// its output goes to. Without "{output}" the program's standard output is its output.
  std::vector<std::string> argv;
  /// A file whose content is every task's input (sent down the tree with each task);
  /// empty: `bytes` of generated text per task. Resolved against the experiment's folder.
  std::string input_file;
  double timeout = 0;               ///< seconds a task may run before it is killed (0: no limit).
  /// Expected SHA-256 of every task's output, 64 hex digits (empty: not checked); a task
  /// whose output differs is counted as failed.
  std::string expect_digest;
  /// The master re-runs the command for its spot checks (only for deterministic programs).
  bool spot_check = false;
  /// Output files (docs/command-tasks.md, "Output files"): each task's output travels back
  /// up the tree with its result and the master writes it as OUT/outputs/APP/NAME, NAME
  /// this template with "{index}" replaced (master only; empty: outputs are not sent back).
  std::string output_file = {};
  /// bytes; a task whose output is larger fails (its output is not sent).
  std::uint64_t max_output_bytes = std::uint64_t{64} << 20;
  /// Whether each task's output is sent back: set with output_file on the master, from
  /// the Welcome on the workers (which do not know output_file).
  bool send_output = false;
  /// One task per file, line or number (`inputs`, `lines`, `array`; runtime/model/BagSource.hpp):
  /// where each task's input and placeholders come from (master only; null otherwise).
  std::shared_ptr<const BagSource> bag = {};
  /// Each task's input starts with its placeholders (tasks/TaskEnvelope.hpp): set with a
  /// bag on the master, from the Welcome on the workers.
  bool task_fields = false;
  /// A failed task is run again up to this many times before it counts as failed (master only).
  std::uint32_t max_retries = 0;

  /// b(k): bytes sent down the tree for one task.
  std::uint64_t input_bytes() const;
  /// c(k): flop of one task (0 for noop).
  double task_flops() const;
  /// Communication-to-computation ratio b(k)/c(k) in bytes/flop (infinity for noop).
  double ccr() const;
};

/// A "{word}" in a command application's argv that is not one of its fields ({index},
/// {input}, {output}): passed to the program as is, most likely a typo ("{inptu}").
struct UnknownArgvField {
  std::size_t arg;    ///< index in argv
  std::string field;  ///< "{inptu}"
};
/// Every such word of `app.argv` ({ followed by letters, digits or _ and }), in order.
std::vector<UnknownArgvField> unknown_argv_fields(const AppSpec& app);

}  // namespace treefarm::model
