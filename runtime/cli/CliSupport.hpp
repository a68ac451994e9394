#pragma once
/// @file CliSupport.hpp
/// What the three executables (`treefarm`, `treefarm-master`, `treefarm-worker`) share on
/// their command line: `--version` (the project version from CMake), the exit-code table
/// as the `--help` footer, a parse that maps CLI11's own codes (104-109) to exit_usage,
/// the `--log-level` check, and the mapping of an exception to an exit code
/// (docs/commands.md, "Exit codes").

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace treefarm::cli_support {

/// The project version ("0.1.0"), from CMake's project(VERSION).
std::string version();

/// The exit-code table as text (the `--help` footer of every executable).
std::string exit_code_footer();

/// Gives `app` a `--version` flag printing "PROGRAM VERSION" and the exit-code footer.
void setup_app(CLI::App& app, const std::string& program);

/// Parses the command line. Returns std::nullopt when the program should go on, else
/// the code to exit with: 0 after --help/--version, exit_usage (2) on any parse error
/// (the message goes to stderr with a pointer to --help).
std::optional<int> parse(CLI::App& app, int argc, const char* const* argv);

/// The spdlog levels accepted by `--log-level`: trace, debug, info, warn, error, critical, off.
const CLI::Validator& log_level_check();

/// Checks for durations: a number of seconds >= 0 ("must be >= 0 seconds, got -5"), and
/// one > 0.
const CLI::Validator& non_negative_seconds();
const CLI::Validator& positive_seconds();

/// Adds `--one-port-window BYTES` bound to `bytes` (default model::default_one_port_window;
/// 0 = off: every task transfer holds the one-port until acknowledged; at most
/// max_one_port_window). A value out of range or not a number is a parse error (exit 2).
CLI::Option* add_one_port_window_option(CLI::App& app, std::uint64_t& bytes);
/// bytes: the largest `--one-port-window` accepted (1 GiB).
constexpr std::uint64_t max_one_port_window = std::uint64_t{1} << 30;

/// Adds `--log-level` (checked against log_level_check) bound to `level`.
CLI::Option* add_log_level_option(CLI::App& app, std::string& level);

/// Logs to stderr at `level` (one of log_level_check's words), pattern
/// "[HH:MM:SS.mmm] [level] message".
void setup_logging(const std::string& level);

/// A command-line mistake found after parsing (e.g. an option that needs another):
/// exit_usage.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The exit code for an error that ended a command: exit_bad_input for a FileError (an
/// input file's content) or a missing file, exit_usage for a UsageError, exit_error
/// otherwise.
int exit_code_for(const std::exception& error);

}  // namespace treefarm::cli_support
