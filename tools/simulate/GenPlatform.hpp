#pragma once
/// @file GenPlatform.hpp
/// `treefarm gen-platform`: random platforms and applications as in papers/beaumont2006
/// §5.1.2 (random trees, wide rather than deep) and §5.1.3 (CCRs evenly spaced), written
/// as an experiment file. The algorithm is in docs/simulation.md ("Platform generator").

#include <cstdint>
#include <string>

namespace treefarm::simulate {

struct GenOptions {
  std::uint32_t nodes = 10;        ///< Nodes of the tree, master included (>= 1).
  std::uint32_t max_degree = 5;    ///< Most children a node may have (>= 1).
  std::uint32_t apps = 3;          ///< K applications (>= 1).
  std::uint64_t seed = 1;          ///< Same seed, same file.
  double ccr_max = 4.6;            ///< bytes/flop; CCRs evenly spaced in [0.001, ccr_max] (§5.1.3).
  double ccr_min = 0.001;          ///< bytes/flop (§5.1.3: multiplying two 3500×3500 matrices).
  std::uint64_t tasks = 200;       ///< Tasks per application (§5.1.4).
  /// How a task's size follows from its CCR (bytes/flop):
  /// - `same_work` (default): every application c = `task_flops` flop per task, the CCR
  ///   sets the bytes b(k) = CCR_k · c (1 MB to 4.6 GB with the defaults);
  /// - `paper_matrices`: every application b = `task_bytes`, one 3500 × 3500 matrix of
  ///   doubles (§5.1.3: CCR_min = 0.001 "corresponds to ... multiplying two 3500 × 3500
  ///   matrices", 4.6 to adding them), the CCR sets the work c(k) = b / CCR_k: 9.8·10¹⁰
  ///   flop at CCR 0.001 (the product's 2·3500³ = 8.6·10¹⁰), 2.1·10⁷ at 4.6 (the sum's
  ///   3500² = 1.2·10⁷).
  enum class TaskSizes { same_work, paper_matrices };
  TaskSizes task_sizes = TaskSizes::same_work;
  double task_flops = 1e9;                    ///< c, flop per task (same_work).
  double task_bytes = 3500.0 * 3500.0 * 8.0;  ///< b, bytes per task (paper_matrices).
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

}  // namespace treefarm::simulate
