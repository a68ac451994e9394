#pragma once
/// @file FuzzDriverStats.hpp
/// What one input of the driver fuzz target (fuzz_driver.cpp) did to the driver: the
/// corpus replay checks with it that a session reaches the driver's message handling,
/// rather than only that it does not crash.

#include <cstddef>

struct FuzzDriverStats {
  std::size_t messages_delivered = 0;  ///< Decoded messages handed to the driver.
  std::size_t sends = 0;               ///< Messages the driver sent through its transport.
  std::size_t jobs_started = 0;        ///< Tasks it started on its local cores.
};

/// The counts of the last input run through the fuzz target's entry point.
const FuzzDriverStats& fuzz_driver_last_stats();
