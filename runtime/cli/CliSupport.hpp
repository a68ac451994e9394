#pragma once
/// @file CliSupport.hpp
/// What the three executables (`treefarm`, `treefarm-master`, `treefarm-worker`) share on
/// their command line: `--version` (the project version from CMake), the exit-code table
/// as the `--help` footer, a parse that maps CLI11's own codes (104-109) to exit_usage,
/// the `--log-level` check, and the mapping of an exception to an exit code
/// (docs/commands.md, "Exit codes"); and the main of a program made of subcommands
/// (`treefarm`, `treefarm-lab`): run_commands().

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace treefarm::cli_support {

/// The project version ("0.1.0"), from CMake's project(VERSION).
std::string version();

/// The exit-code table as text (the `--help` footer of every executable); the `--timeout`
/// row (124) only `with_timeout`.
std::string exit_code_footer(bool with_timeout = true);

/// Marks `command` as one that exits with exit_timeout (124) when its `--timeout` expires:
/// its `--help` footer, and its parents', list that code; the others' do not.
void exits_on_timeout(const CLI::App& command);

/// Gives `app` a `--version` flag printing "PROGRAM VERSION" (parse() gives it and its
/// subcommands the exit-code footer),
/// and makes `program` the name error_message() and report_error() print.
void setup_app(CLI::App& app, const std::string& program);

/// The one error format of the three executables, on stderr: "PROGRAM: error: MESSAGE"
/// (PROGRAM as given to setup_app, "treefarm" before it).
std::string error_message(const std::string& message);
/// The same for a warning: "PROGRAM: warning: MESSAGE".
std::string warning_message(const std::string& message);
/// Prints error_message(what) on stderr and returns exit_code_for(error).
int report_error(const std::exception& error);

/// An option whose value may be left out (CLI11 `expected(0, 1)`) takes the next word as
/// its value only when `takes(word)`; otherwise parse() gives it `absent` and the word is
/// read as what follows it (`treefarm run --dashboard exp.toml`: exp.toml is the experiment
/// file, the dashboard gets its default address). Matched by the option's long names.
void optional_value(const CLI::Option& option, std::function<bool(const std::string&)> takes, std::string absent);

/// Parses the command line (after giving `app` and its subcommands the exit-code footer
/// that fits each: exits_on_timeout(); and every unsigned option a check that refuses a
/// negative number, which CLI11 would wrap around). Returns std::nullopt when the program should go on, else
/// the code to exit with: 0 after --help/--version (`--version` is accepted after any
/// subcommand too), exit_usage (2) on any parse error. The message goes to stderr in the
/// error_message() format with a pointer to --help, and names the word that was not
/// understood (an unknown subcommand or option) before any other complaint.
std::optional<int> parse(CLI::App& app, int argc, const char* const* argv);

/// The first word of `argv` that `app` does not know, as a sentence ("unknown command
/// 'nosuch' (commands: run, ...)", "unknown option '--nosuch' for 'treefarm run'"), or
/// "" when every option and subcommand is known.
std::string unknown_word(const CLI::App& app, int argc, const char* const* argv);

/// The spdlog levels accepted by `--log-level`: trace, debug, info, warn, error, critical, off.
const CLI::Validator& log_level_check();

/// The scheduling policies' names (core::policy_names): "unknown policy 'X'; expected one
/// of: fcfs, ...", a usage error (exit 2).
const CLI::Validator& policy_check();

/// "all", or a comma-separated list of policy names: a usage error (exit 2) naming the
/// unknown one. No help name (the option's own text says what it takes).
const CLI::Validator& policies_check();

/// Checks for durations: a number of seconds >= 0 ("must be >= 0 seconds, got -5"), and
/// one > 0.
const CLI::Validator& non_negative_seconds();
const CLI::Validator& positive_seconds();

/// CLI::NonNegativeNumber and CLI::PositiveNumber (help names NONNEGATIVE, POSITIVE) with a
/// readable message ("must be > 0, got 0", not a range up to a 300-digit number).
const CLI::Validator& non_negative_number();
const CLI::Validator& positive_number();

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

/// An input file whose content is bad, the message naming it (a key file): exit_bad_input.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Calls `load` (which reads an input file) and turns what it throws into BadInput.
template <typename Load>
auto load_input(Load&& load) -> decltype(load()) {
  try {
    return load();
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
}

/// The command was interrupted (SIGINT/SIGTERM seen while it worked): exit_interrupted.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The exit code for an error that ended a command: exit_bad_input for a FileError (an
/// input file's content), a BadInput or a calibration of another experiment, exit_usage for a UsageError,
/// exit_interrupted for Interrupted, exit_error otherwise.
int exit_code_for(const std::exception& error);

/// One subcommand of a program: the CLI11 app it parsed into and what to do when it was
/// chosen. `run` returns the process exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
  /// When set, decides whether this entry was chosen (instead of `app->parsed()`).
  std::function<bool()> chosen = {};
};

/// A program's subcommands, in registration order.
using Commands = std::vector<Command>;

/// Set by SIGINT/SIGTERM once run_commands() caught them; long-running commands poll it.
std::atomic<bool>& interrupted();
/// The signal that set interrupted() (SIGINT or SIGTERM; SIGINT until one came).
std::atomic<int>& interrupt_signal();

/// The main of a program made of subcommands: parses (parse()), logs on stderr at info, turns SIGINT/SIGTERM into
/// interrupted(), ignores SIGPIPE, and runs the chosen command. An exception ends the
/// program through report_error() ("PROGRAM: error: what", exit_code_for(error)); the program
/// name is the one given to setup_app(). Returns the exit code.
int run_commands(CLI::App& app, const Commands& commands, int argc, char** argv);

}  // namespace treefarm::cli_support
