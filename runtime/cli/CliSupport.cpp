#include "runtime/cli/CliSupport.hpp"

#include <array>
#include <cmath>
#include <string>
#include <cstdio>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "runtime/model/Experiment.hpp"
#include "runtime/node/ExitCode.hpp"

#ifndef TREEFARM_VERSION
#error "TREEFARM_VERSION must be defined by CMake (project VERSION)"
#endif

namespace treefarm::cli_support {

namespace {
constexpr std::array<const char*, 7> levels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
}

std::string version() { return TREEFARM_VERSION; }

std::string exit_code_footer() {
  std::string out = "Exit codes:\n";
  for (const auto& row : node::exit_code_table) {
    char line[160];
    std::snprintf(line, sizeof line, "  %3d  %s\n", row.code, row.meaning);
    out += line;
  }
  out += "Details: docs/commands.md";
  return out;
}

void setup_app(CLI::App& app, const std::string& program) {
  app.set_version_flag("--version", program + " " + version(), "Print the version and exit");
  app.footer(exit_code_footer());
}

std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? 0 : node::exit_usage;
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e) == 0 ? 0 : node::exit_usage;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e) == 0 ? 0 : node::exit_usage;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // a Success of some other kind
    std::cerr << app.get_name() << ": " << e.what() << "\nRun with --help for more information.\n";
    return node::exit_usage;
  }
}

const CLI::Validator& log_level_check() {
  static const CLI::Validator check(
      [](std::string& value) -> std::string {
        for (const char* l : levels)
          if (value == l) return {};
        std::string list;
        for (const char* l : levels) list += (list.empty() ? "" : ", ") + std::string(l);
        return "unknown log level '" + value + "'; expected one of: " + list;
      },
      "LEVEL", "log level");
  return check;
}

namespace {
CLI::Validator seconds_check(bool zero_ok) {
  return CLI::Validator(
      [zero_ok](std::string& value) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != value.size() || !std::isfinite(v)) return "'" + value + "' is not a number of seconds";
        if (zero_ok ? v < 0 : v <= 0)
          return std::string("must be ") + (zero_ok ? ">= 0" : "> 0") + " seconds, got " + value;
        return {};
      },
      zero_ok ? "SECONDS>=0" : "SECONDS>0", zero_ok ? "non-negative seconds" : "positive seconds");
}
}  // namespace

const CLI::Validator& non_negative_seconds() {
  static const CLI::Validator check = seconds_check(true);
  return check;
}

const CLI::Validator& positive_seconds() {
  static const CLI::Validator check = seconds_check(false);
  return check;
}

CLI::Option* add_one_port_window_option(CLI::App& app, std::uint64_t& bytes) {
  bytes = model::default_one_port_window;
  return app.add_option("--one-port-window", bytes,
                        "bytes: one-port model, task transfers of at most this size free the port when handed to the "
                        "transport while their unacknowledged bytes stay within it (0 = off: each transfer holds the "
                        "port until acknowledged; docs/protocol.md \"Received\")")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{0}, max_one_port_window));
}

CLI::Option* add_log_level_option(CLI::App& app, std::string& level) {
  return app.add_option("--log-level", level, "Log level on stderr: trace|debug|info|warn|error|critical|off")
      ->check(log_level_check())
      ->capture_default_str();
}

void setup_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("treefarm");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
}

int exit_code_for(const std::exception& error) {
  if (dynamic_cast<const model::FileError*>(&error)) return node::exit_bad_input;
  if (dynamic_cast<const UsageError*>(&error)) return node::exit_usage;
  return node::exit_error;
}

}  // namespace treefarm::cli_support
