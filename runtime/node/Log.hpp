#pragma once
/// @file Log.hpp
/// How the node driver speaks to people: through a sink the adapter gives
/// (NodeOptions::log), never through a logging library of its own. The ZeroMQ and SimGrid
/// adapters forward to spdlog (runtime/logging); tests and fuzzers may leave it unset (silent)
/// or record the lines.

#include <functional>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace treefarm::node {

enum class LogLevel { debug, info, warn, error };

/// Receives each line the driver logs (already formatted; no trailing newline).
using LogSink = std::function<void(LogLevel, const std::string&)>;

/// The driver's side of a LogSink: formats only when a sink is set.
class Logger {
 public:
  explicit Logger(LogSink sink = {}) : sink_(std::move(sink)) {}
  template <class... Args>
  void debug(fmt::format_string<Args...> f, Args&&... args) const { emit(LogLevel::debug, f, std::forward<Args>(args)...); }
  template <class... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) const { emit(LogLevel::info, f, std::forward<Args>(args)...); }
  template <class... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) const { emit(LogLevel::warn, f, std::forward<Args>(args)...); }
  template <class... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) const { emit(LogLevel::error, f, std::forward<Args>(args)...); }

 private:
  template <class... Args>
  void emit(LogLevel level, fmt::format_string<Args...> f, Args&&... args) const {
    if (sink_) sink_(level, fmt::format(f, std::forward<Args>(args)...));
  }
  LogSink sink_;
};

}  // namespace treefarm::node
