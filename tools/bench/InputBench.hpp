#pragma once
/// @file InputBench.hpp
/// `treefarm bench inputs`: what the master pays to make a task's secret input (the
/// unforgeable inputs, tasks/Payload and tasks/InputPrefetcher), beside the machine's own
/// limit measured in the same run: a memcpy of the same bytes (the memory bandwidth a fill
/// cannot beat). For one matrix input (2·n² doubles): the fill into a recycled buffer (what
/// the prefetcher does), into a fresh buffer (allocation, zero-fill and page faults, what
/// the master did before the prefetcher), and the time the loop thread waits per input
/// when it takes inputs from the prefetcher as fast as it can.

#include <cstdint>
#include <ostream>

namespace treefarm::bench {

struct InputBenchOptions {
  std::uint32_t n = 512;      ///< matrix order: 2·n²·8 bytes per input (512: the quickstart's matadd)
  std::uint32_t inputs = 200; ///< inputs per measurement, >= 1
  std::uint32_t rounds = 5;   ///< measurements per figure (the median is printed), >= 1
  bool json = false;          ///< JSON instead of text
};

/// Prints milliseconds per input for memcpy (reference), fill into a recycled buffer, fill
/// into a fresh buffer, and the prefetcher's wait per input on the taking thread, with the
/// bytes per input and GB/s. Each fill is checked against fill_input. @return 0.
/// @throws std::invalid_argument for a zero option; std::runtime_error if an input differs.
int bench_inputs(std::ostream& out, const InputBenchOptions& options);

}  // namespace treefarm::bench
