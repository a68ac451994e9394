#pragma once
/// @file MachineGenerator.hpp
/// Random multi-LAN machine sets for planning studies (`treefarm gen-machines`). The
/// distributions are documented in docs/machines-file.md ("Generated sets").

#include <cstdint>
#include <string>

#include "runtime/plan/MachineSet.hpp"

namespace treefarm::plan {

struct GenMachinesOptions {
  std::uint32_t machines = 16;        ///< Machines (>= 1).
  std::uint32_t lans = 2;             ///< LANs (1 <= lans <= machines); each gets >= 1 machine.
  std::uint64_t seed = 1;             ///< Same seed and options, same set.
  std::uint32_t cores_min = 1;        ///< Cores per machine, uniform integer in [min, max].
  std::uint32_t cores_max = 8;
  double speed_min = 1e9;             ///< flop/s per core, uniform in [min, max].
  double speed_max = 4e9;
  double lan_bandwidth_min = 12.5e6;  ///< bytes/s inside a LAN (100 Mbit/s), log-uniform.
  double lan_bandwidth_max = 125e6;   ///< (1 Gbit/s).
  double inter_bandwidth_min = 0.125e6;  ///< bytes/s between LANs (1 Mbit/s), log-uniform.
  double inter_bandwidth_max = 12.5e6;   ///< (100 Mbit/s).
  double lan_latency = 100e-6;        ///< seconds inside a LAN.
  double inter_latency_min = 1e-3;    ///< seconds between LANs, uniform.
  double inter_latency_max = 50e-3;
};

/// A random machine set: LANs "lan0".."lan<L-1>"; machines "m0".."m<N-1>" (machine i
/// in LAN i mod L for i < L, then in a uniformly random LAN); inter-LAN links for every
/// pair of LANs. Throws std::invalid_argument for options out of range.
MachineSet generate_machines(const GenMachinesOptions& options);

/// The `treefarm gen-machines` command line that makes this set (for file headers).
std::string gen_machines_command(const GenMachinesOptions& options);

}  // namespace treefarm::plan
