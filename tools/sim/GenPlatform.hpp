#pragma once
/// @file GenPlatform.hpp
/// `treefarm gen-platform`: random platforms and applications as in papers/beaumont2006
/// §5.1.2 (random trees, wide rather than deep) and §5.1.3 (CCRs evenly spaced), written
/// as an experiment file. The algorithm is in docs/simulation.md ("Platform generator").

#include <cstdint>
#include <string>

namespace treefarm::tools {

struct GenOptions {
  std::uint32_t nodes = 10;        ///< Nodes of the tree, master included (>= 1).
  std::uint32_t max_degree = 5;    ///< Most children a node may have (>= 1).
  std::uint32_t apps = 3;          ///< K applications (>= 1).
  std::uint64_t seed = 1;          ///< Same seed, same file.
  double ccr_max = 4.6;            ///< bytes/flop; CCRs evenly spaced in [0.001, ccr_max] (§5.1.3).
  double ccr_min = 0.001;          ///< bytes/flop (§5.1.3: multiplying two 3500×3500 matrices).
  std::uint64_t tasks = 200;       ///< Tasks per application (§5.1.4).
  double task_flops = 1e9;         ///< c(k), flop per task, the same for every application.
  double speed_min = 22.151e6;     ///< flop/s, uniform in [speed_min, speed_max] (§5.1.2).
  double speed_max = 171.667e6;
  double bandwidth_min = 110e3;    ///< bits/s, uniform in [bandwidth_min, bandwidth_max] (§5.1.2).
  double bandwidth_max = 7e6;
  double latency_min = 0.006;      ///< seconds, log-uniform in [latency_min, latency_max] (§5.1.2).
  double latency_max = 10.0;
  std::uint32_t buffer = 10;       ///< [run] buffer (§5.2.1: room for 10 tasks).
  std::string policy = "fcfs";     ///< [run] policy.
};

/// The experiment file's text (TOML, loads with model::parse_experiment). Nodes are
/// "n0" (the master) to "n<N-1>", one core each; apps "a0".."a<K-1>" are abstract
/// (bytes + flops), weight 1. Throws std::invalid_argument for options out of range.
std::string generate_platform(const GenOptions& options);

}  // namespace treefarm::tools
