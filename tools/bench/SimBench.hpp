#pragma once
/// @file SimBench.hpp
/// `treefarm bench simulate`: cost of simulating large generated trees.

#include <cstdint>
#include <string>
#include <iosfwd>
#include <vector>

namespace treefarm::bench {

struct SimBenchOptions {
  std::vector<std::uint32_t> sizes{1000, 10000};  ///< Nodes of the generated trees.
  std::uint32_t apps = 10;
  std::uint64_t tasks = 200;  ///< tasks per application
  std::uint32_t max_degree = 5;
  std::uint64_t seed = 1;
  double wall_limit = 300;   ///< seconds per simulation; beyond it, what was reached is reported.
  std::string plot;          ///< a PNG: wall seconds and peak MiB against nodes, log-log ("" none).
};

/// For each size: generates a tree (gen-platform, 10 applications of 200 tasks, FCFS),
/// simulates it and prints the generation, LP, set-up (platform and actors) and total
/// simulation wall times, peak memory (getrusage ru_maxrss of the
/// simulating process), simulated time, events and whether it completed within the limit;
/// with two sizes or more, the fitted exponents of wall time and peak memory against nodes.
void bench_simulate(std::ostream& out, const SimBenchOptions& options);
void bench_simulate(std::ostream& out);

}  // namespace treefarm::bench
