#pragma once
/// @file MachineSet.hpp
/// The machines a tree may be planned on, grouped in LANs, and the network between
/// them: the MACHINES.toml file (docs/machines-file.md). Used by the planner
/// (`treefarm plan`, runtime/plan/Planner.hpp) and written by `treefarm gen-machines`.
///
/// Units: flop/s per core, bytes, bytes/s, seconds.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace treefarm::plan {

/// One machine: where a master or worker may run.
struct Machine {
  std::string name;
  std::size_t lan = 0;          ///< Index into MachineSet::lans.
  std::uint32_t cores = 1;      ///< Cores it computes with (>= 1).
  double speed = 0.0;           ///< flop/s per core (calibrated).
  std::uint64_t memory = 0;     ///< bytes (0: unknown). Informational.
  int line = 0;                 ///< Line of its [[machine]] entry (0: generated).

  /// cores · speed, flop/s.
  double power() const { return static_cast<double>(cores) * speed; }
};

/// A LAN: machines that talk to each other at `bandwidth`.
struct Lan {
  std::string name;
  double bandwidth = 0.0;  ///< bytes/s between two machines of this LAN.
  double latency = 0.0;    ///< seconds between two machines of this LAN.
};

/// Machines, LANs and the bandwidth/latency between any two machines.
///
/// Two machines of one LAN talk at the LAN's bandwidth; two machines of different LANs at
/// the inter-LAN link's bandwidth (lan_bandwidth). A measured pair (pair_bandwidth, set by
/// [[pair]] entries or `treefarm probe`) overrides both: a full pairwise matrix is a
/// [[pair]] for every pair.
struct MachineSet {
  std::vector<Lan> lans;
  std::vector<Machine> machines;
  /// [a][b], a != b: bytes/s of the link between LANs a and b (symmetric). The diagonal
  /// is unused.
  std::vector<std::vector<double>> lan_bandwidth;
  std::vector<std::vector<double>> lan_latency;  ///< [a][b]: seconds, symmetric.
  /// Measured machine pairs, [i][j] bytes/s; 0 = not measured (use the LAN values).
  /// Empty when no pair was given.
  std::vector<std::vector<double>> pair_bandwidth;
  std::vector<std::vector<double>> pair_latency;  ///< [i][j] seconds; < 0 = not measured.

  /// bytes/s between machines i and j (i != j).
  double bandwidth(std::size_t i, std::size_t j) const;
  /// seconds between machines i and j (i != j).
  double latency(std::size_t i, std::size_t j) const;
  /// Index of the machine called `name`, or nullopt.
  std::optional<std::size_t> machine_index(const std::string& name) const;
  /// Index of the LAN called `name`, or nullopt.
  std::optional<std::size_t> lan_index(const std::string& name) const;
};

/// Reads a MACHINES.toml file. Throws model::FileError ("FILE:LINE: field 'F': ...") for
/// a missing, unknown, ill-typed or out-of-range field.
MachineSet load_machines(const std::string& path);
/// Parses MACHINES.toml text; `path` is used in error messages. Throws model::FileError.
MachineSet parse_machines(const std::string& text, const std::string& path);
/// The TOML text of a machine set (parses back to the same set, values in base units).
/// `header` lines are written first as comments.
std::string to_toml(const MachineSet& set, const std::string& header = "");

/// Checks the invariants documented above (names unique, LAN indices valid, positive
/// bandwidths and speeds, square symmetric matrices). Throws std::invalid_argument.
void validate(const MachineSet& set);

}  // namespace treefarm::plan
