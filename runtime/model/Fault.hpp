#pragma once
/// @file Fault.hpp
/// Network faults of an emulated run (`[[fault]]` entries of an experiment file and
/// `treefarm emulate --fault`; docs/experiment-file.md, docs/emulation.md): for
/// `duration` seconds from `at`, the link between a node and its parent loses packets,
/// is down, or is cut so that the node and its whole subtree are partitioned off.

#include <optional>
#include <string>
#include <vector>

namespace treefarm::model {

/// What a fault does to the link between its node and the node's parent.
enum class FaultKind {
  loss,       ///< each packet, both directions, dropped with probability `loss`
  down,       ///< the link is down (no carrier on either end)
  partition,  ///< every packet dropped, the link stays up: the node's subtree is cut off silently
};

/// "loss", "down", "partition".
const char* to_string(FaultKind kind);

/// One fault.
struct FaultSpec {
  double at = 0;        ///< seconds from the start of the run (>= 0)
  double duration = 0;  ///< seconds (> 0)
  std::string node;     ///< Name of a [[node]] other than the master.
  FaultKind kind = FaultKind::loss;
  double loss = 0;      ///< kind loss: probability in (0, 1] that a packet is dropped
  int line = 0;         ///< Line of the [[fault]] entry (0: given on the command line).
  std::string where;    ///< For messages: "FILE:LINE: [[fault]]" or "--fault 'TEXT'".
};

/// Parses the command-line form "NODE:AT:DURATION:loss=P", "NODE:AT:DURATION:down" or
/// "NODE:AT:DURATION:partition" (AT and DURATION in seconds). Throws std::invalid_argument
/// naming the option and the part that is wrong. The node is checked by check_faults.
FaultSpec parse_fault_option(const std::string& text);

struct Experiment;

/// What is wrong with a fault: the key ("node", "at") and why.
struct FaultProblem {
  std::string key;
  std::string message;
};

/// Checks `fault` against the experiment's tree and against `earlier` faults: its node
/// exists and is not the master, and it does not overlap in time a fault on the same
/// link. nullopt = fine.
std::optional<FaultProblem> check_fault(const FaultSpec& fault, const std::vector<FaultSpec>& earlier,
                                        const Experiment& experiment);

/// The `[[fault]]` entries of the experiment file `path` (already read as `experiment`),
/// checked against its tree and sorted by `at`. Throws FileError naming the file, the line
/// and the field. (parse_experiment checks them too, so any command refuses a bad one.)
std::vector<FaultSpec> load_faults(const std::string& path, const Experiment& experiment);

}  // namespace treefarm::model
