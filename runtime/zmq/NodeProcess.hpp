#pragma once
/// @file NodeProcess.hpp
/// What a node process does around its ZeroMQ loop (ZmqNode.cpp): its descriptor limit,
/// its ready file, and its loop's exit code.

#include <string>

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "runtime/node/ExitCode.hpp"

namespace treefarm::zmq_node {

/// Every child is a connection (a file descriptor): allow as many as the system does.
void raise_descriptor_limit();

/// Writes `endpoint` to `path` whole (through a temporary file and a rename).
void write_ready_file(const std::string& path, const std::string& endpoint);

/// Runs a node's loop (`body`), turning what it throws into a log line and the exit code
/// (2 for a ZeroMQ error, node::exit_error for any other).
template <class Body>
int exit_code_of(const std::string& name, Body&& body) {
  try {
    return body();
  } catch (const zmq::error_t& e) {
    spdlog::error("{}: ZeroMQ error: {}", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}: {}", name, e.what());
    return node::exit_error;
  }
}

}  // namespace treefarm::zmq_node
