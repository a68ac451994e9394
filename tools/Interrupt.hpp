#pragma once
/// @file Interrupt.hpp
/// The process-wide stop request of the `treefarm` command: set by its SIGINT/SIGTERM
/// handler, polled by everything that runs long (trees of processes, measurements), so
/// that Ctrl-C ends any phase of any command within about a second.

#include <atomic>

namespace treefarm::tools {

/// Set (lock-free, from a signal handler) when the command is to stop.
std::atomic<bool>& interrupted();
/// The signal that set interrupted() (SIGINT until one came).
std::atomic<int>& interrupt_signal();

}  // namespace treefarm::tools
