#include "runtime/logging/SpdlogSink.hpp"

#include <spdlog/spdlog.h>

namespace treefarm::logging {

node::LogSink spdlog_sink() {
  return [](node::LogLevel level, const std::string& line) {
    switch (level) {
      case node::LogLevel::debug: spdlog::debug("{}", line); break;
      case node::LogLevel::info: spdlog::info("{}", line); break;
      case node::LogLevel::warn: spdlog::warn("{}", line); break;
      case node::LogLevel::error: spdlog::error("{}", line); break;
    }
  };
}

}  // namespace treefarm::logging
