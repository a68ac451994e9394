#include "runtime/cli/CliSupport.hpp"

#include <array>
#include <functional>
#include <vector>
#include <algorithm>
#include <csignal>
#include <cmath>
#include <string>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "runtime/core/Policy.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/node/ExitCode.hpp"
#include "runtime/process/Interrupt.hpp"

#ifndef TREEFARM_VERSION
#error "TREEFARM_VERSION must be defined by CMake (project VERSION)"
#endif

namespace treefarm::cli_support {

namespace {
constexpr std::array<const char*, 7> levels = {"trace", "debug", "info", "warn", "error", "critical", "off"};

std::string& program_name() {
  static std::string name = "treefarm";
  return name;
}

bool looks_like_number(const std::string& word) {
  char* end = nullptr;
  (void)std::strtod(word.c_str(), &end);
  return end != word.c_str() && *end == '\0';
}

/// "treefarm run" for a subcommand, the program for the top.
std::string command_path(const CLI::App* app) {
  std::string path;
  for (; app && app->get_parent(); app = app->get_parent()) path = app->get_name() + (path.empty() ? "" : " " + path);
  return path.empty() ? program_name() : program_name() + " " + path;
}

const CLI::App* subcommand_named(const CLI::App* app, const std::string& word) {
  for (const auto* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    if (sub->check_name(word)) return sub;
  return nullptr;
}

const CLI::Option* option_named(const CLI::App* app, const std::string& name) {
  for (; app; app = app->get_parent())
    if (const auto* o = app->get_option_no_throw(name)) return o;
  return nullptr;
}
}  // namespace

std::string version() { return TREEFARM_VERSION; }

std::string exit_code_footer(bool with_timeout) {
  std::string out = "Exit codes:\n";
  for (const auto& row : node::exit_code_table) {
    if (row.code == node::exit_timeout && !with_timeout) continue;
    char code[16];
    std::snprintf(code, sizeof code, "  %3d  ", row.code);
    out += code + std::string(row.meaning) + "\n";
  }
  out += "Details: docs/commands.md";
  return out;
}

namespace {
std::vector<const CLI::App*>& timing_out() {
  static std::vector<const CLI::App*> commands;
  return commands;
}

/// CLI11 reads "-7" into an unsigned option as 2^64 - 7: refused instead. No name and no
/// description, so --help is unchanged.
const CLI::Validator& not_negative_word() {
  static const CLI::Validator check(
      [](std::string& value) -> std::string {
        const auto first = value.find_first_not_of(" \t");
        if (first != std::string::npos && value[first] == '-') return "must be a whole number >= 0, got " + value;
        return {};
      },
      "", "");
  return check;
}

/// Gives `app` and every subcommand under it the exit-code footer that fits it, and every
/// unsigned option the check that refuses a negative number (once).
/// Returns whether `app` or a subcommand under it exits with exit_timeout.
bool set_footers(CLI::App& app) {
  static std::vector<const CLI::Option*> checked;
  for (auto* o : app.get_options({}))
    if (o->get_type_name().rfind("UINT", 0) == 0 && std::find(checked.begin(), checked.end(), o) == checked.end()) {
      o->check(not_negative_word());
      checked.push_back(o);
    }
  bool times_out = std::find(timing_out().begin(), timing_out().end(), &app) != timing_out().end();
  for (auto* sub : app.get_subcommands({})) times_out = set_footers(*sub) || times_out;
  app.footer(exit_code_footer(times_out));
  return times_out;
}
}  // namespace

void exits_on_timeout(const CLI::App& command) { timing_out().push_back(&command); }

void setup_app(CLI::App& app, const std::string& program) {
  program_name() = program;
  app.set_version_flag("--version", program + " " + version(), "Print the version and exit");
}

std::string error_message(const std::string& message) { return program_name() + ": error: " + message; }

std::string warning_message(const std::string& message) { return program_name() + ": warning: " + message; }

int report_error(const std::exception& error) {
  std::cerr << error_message(error.what()) << "\n";
  return exit_code_for(error);
}

namespace {
/// How far a command line goes into `app`: the deepest subcommand named, and the first
/// word not understood (an unknown option or subcommand), as a sentence, or "".
struct Scan {
  const CLI::App* at;
  std::string unknown;
};

Scan scan(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* at = &app;
  bool value_next = false;  // the word before was an option that takes a value
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() > 1 && word[0] == '-' && !looks_like_number(word)) {
      const std::string name = word.substr(0, word.find('='));
      // -abc: short flags together; only a single short name is looked up.
      if (name[1] != '-' && name.size() > 2) {
        value_next = false;
        continue;
      }
      const auto* o = option_named(at, name);
      if (!o) return {at, "unknown option '" + name + "' for '" + command_path(at) + "'"};
      value_next = o->get_expected_max() > 0 && word.find('=') == std::string::npos;
      continue;
    }
    if (value_next) {
      value_next = false;
      continue;
    }
    if (const auto* sub = subcommand_named(at, word)) {
      at = sub;
      continue;
    }
    const auto subs = at->get_subcommands([](const CLI::App*) { return true; });
    const bool takes_words = !at->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
    if (!subs.empty() && !takes_words) {
      std::string names;
      for (const auto* sub : subs) names += (names.empty() ? "" : ", ") + sub->get_name();
      return {at, "unknown command '" + word + "' for '" + command_path(at) + "' (commands: " + names + ")"};
    }
  }
  return {at, ""};
}
}  // namespace

std::string unknown_word(const CLI::App& app, int argc, const char* const* argv) {
  return scan(app, argc, argv).unknown;
}

namespace {

struct OptionalValue {
  std::vector<std::string> names;  ///< "--NAME" for each long name
  std::function<bool(const std::string&)> takes;
  std::string absent;
};

std::vector<OptionalValue>& optional_values() {
  static std::vector<OptionalValue> all;
  return all;
}

/// argv with `absent` inserted after an optional-value option whose next word it does not take.
std::vector<std::string> with_optional_values(int argc, const char* const* argv) {
  std::vector<std::string> words(argv, argv + argc);
  for (std::size_t i = 1; i + 1 < words.size() && words[i] != "--"; ++i)
    for (const auto& o : optional_values())
      if (std::find(o.names.begin(), o.names.end(), words[i]) != o.names.end() && !words[i + 1].starts_with("-") &&
          !o.takes(words[i + 1])) {
        words.insert(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, o.absent);
        ++i;
        break;
      }
  return words;
}

}  // namespace

void optional_value(const CLI::Option& option, std::function<bool(const std::string&)> takes, std::string absent) {
  OptionalValue o{{}, std::move(takes), std::move(absent)};
  for (const auto& name : option.get_lnames()) o.names.push_back("--" + name);
  optional_values().push_back(std::move(o));
}

std::optional<int> parse(CLI::App& app, int argc_given, const char* const* argv_given) {
  const std::vector<std::string> words = with_optional_values(argc_given, argv_given);
  std::vector<const char*> pointers;
  for (const auto& w : words) pointers.push_back(w.c_str());
  const int argc = static_cast<int>(pointers.size());
  const char* const* argv = pointers.data();
  set_footers(app);
  // `--version` after a subcommand too ("treefarm run --version"), before a missing
  // argument could be complained about.
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i)
    if (std::string(argv[i]) == "--version") {
      std::cout << program_name() << " " << version() << "\n";
      return 0;
    }
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
    // The word not understood first: CLI11 would complain of a missing argument before it.
    const auto where = scan(app, argc, argv);
    std::cerr << error_message(where.unknown.empty() ? e.what() : where.unknown) << "\nRun '" << command_path(where.at)
              << " --help' for more information.\n";
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

const CLI::Validator& policy_check() {
  static const CLI::Validator check(
      [](std::string& value) -> std::string {
        if (core::is_policy_name(value)) return {};
        std::string list;
        for (const auto& n : core::policy_names()) list += (list.empty() ? "" : ", ") + n;
        return "unknown policy '" + value + "'; expected one of: " + list;
      },
      "POLICY", "policy");
  return check;
}

const CLI::Validator& policies_check() {
  static const CLI::Validator check(
      [](std::string& value) -> std::string {
        if (value == "all") return {};
        for (const auto& name : CLI::detail::split(value, ','))
          if (!core::is_policy_name(name)) {
            std::string list;
            for (const auto& n : core::policy_names()) list += (list.empty() ? "" : ", ") + n;
            return "unknown policy '" + name + "'; expected all, or a comma-separated list of: " + list;
          }
        return {};
      },
      "", "");
  return check;
}

namespace {
/// A finite number above 0 (or at least 0 with `zero_ok`); `unit` ("" or " seconds") is
/// named in the refusal.
CLI::Validator bound_check(bool zero_ok, const std::string& unit, const std::string& name, const std::string& description) {
  return CLI::Validator(
      [zero_ok, unit](std::string& value) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != value.size() || !std::isfinite(v))
          return "'" + value + "' is not a number" + (unit.empty() ? "" : " of" + unit);
        if (zero_ok ? v < 0 : v <= 0) return std::string("must be ") + (zero_ok ? ">= 0" : "> 0") + unit + ", got " + value;
        return {};
      },
      name, description);
}
CLI::Validator seconds_check(bool zero_ok) {
  return bound_check(zero_ok, " seconds", zero_ok ? "SECONDS>=0" : "SECONDS>0", zero_ok ? "non-negative seconds" : "positive seconds");
}
CLI::Validator number_check(bool zero_ok) {
  return bound_check(zero_ok, "", zero_ok ? "NONNEGATIVE" : "POSITIVE", zero_ok ? "non-negative number" : "positive number");
}
}  // namespace

const CLI::Validator& non_negative_number() {
  static const CLI::Validator check = number_check(true);
  return check;
}

const CLI::Validator& positive_number() {
  static const CLI::Validator check = number_check(false);
  return check;
}

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
                        "bytes: one-port model, task transfers of at most 64 KiB (and at most this size) free the port "
                        "when handed to the transport while their unacknowledged bytes stay within it (0 = off: each "
                        "transfer holds the port until acknowledged; docs/protocol.md \"Received\")")
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
  if (dynamic_cast<const model::CalibrationMismatch*>(&error)) return node::exit_bad_input;
  if (dynamic_cast<const BadInput*>(&error)) return node::exit_bad_input;
  if (dynamic_cast<const UsageError*>(&error)) return node::exit_usage;
  if (dynamic_cast<const Interrupted*>(&error) || dynamic_cast<const process::Interrupted*>(&error))
    return node::exit_interrupted;
  return node::exit_error;
}

std::atomic<bool>& interrupted() { return process::stop_requested(); }

std::atomic<int>& interrupt_signal() { return process::stop_signal(); }

int run_commands(CLI::App& app, const Commands& commands, int argc, char** argv) {
  if (const auto rc = parse(app, argc, argv)) return *rc;
  setup_logging("info");  // logs on stderr; stdout is for results
  std::signal(SIGINT, process::on_stop_signal);
  std::signal(SIGTERM, process::on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    for (const auto& c : commands)
      if (c.chosen ? c.chosen() : c.app->parsed()) return c.run();
  } catch (const std::exception& e) {
    return report_error(e);
  }
  return 0;
}

}  // namespace treefarm::cli_support
