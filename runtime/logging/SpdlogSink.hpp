#pragma once
/// @file SpdlogSink.hpp
/// The node driver's log lines (runtime/node/Log.hpp) through spdlog, at the same levels:
/// the sink both adapters (runtime/zmq, runtime/sim) give their drivers.

#include "runtime/node/Log.hpp"

namespace treefarm::logging {

/// A LogSink writing to spdlog's default logger.
node::LogSink spdlog_sink();

}  // namespace treefarm::logging
