// treefarm emulate (docs/commands.md).
#include <iostream>
#include <memory>
#include <regex>
#include <stdexcept>

#include "runtime/cli/CliSupport.hpp"
#include "tools/cli/Command.hpp"
#include "tools/emulate/Emulate.hpp"

namespace treefarm::cli {

namespace {
struct EmulateCli {
  std::string experiment, mode, policies = "all";
  bool cleanup = false;
  std::vector<std::string> faults;
  emulate::EmulateOptions eo;
  const CLI::Option* calibration_out = nullptr;  ///< given: calibrate only
};

int run_emulate(EmulateCli o) {
  if (o.cleanup) return emulate::emulate_cleanup(std::cout);
  if (o.experiment.empty() || o.mode.empty())
    throw cli_support::UsageError("usage: treefarm emulate EXPERIMENT.toml run|calibrate|compare [options], or --cleanup");
  // An option of another mode is refused, not ignored.
  if (o.policies != "all" && o.mode != "compare") throw cli_support::UsageError("--policies is for emulate ... compare");
  if (o.calibration_out && o.calibration_out->count() > 0 && o.mode != "calibrate")
    throw cli_support::UsageError("--calibration-out is for emulate ... calibrate");
  if (o.policies != "all") o.eo.policies = CLI::detail::split(o.policies, ',');
  for (const auto& text : o.faults) o.eo.faults.push_back(model::parse_fault_option(text));
  return emulate::emulate_command(o.experiment, o.mode, o.eo, interrupted());
}
}  // namespace

void add_emulate_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<EmulateCli>();
  auto* emu = app.add_subcommand("emulate", "Run on an emulated heterogeneous LAN: namespaces, tbf-shaped links, CPU quotas (root)");
  emu->add_option("experiment", o->experiment, "Experiment file (bandwidth, cpu_quota, cpuset per node)");
  emu->add_option("mode", o->mode, "run | calibrate | compare")->check(CLI::IsMember({"run", "calibrate", "compare"}));
  emu->add_flag("--cleanup", o->cleanup, "Remove what a crashed emulation left behind, and exit");
  emu->add_option("--out", o->eo.launch.out_dir, "Output directory (results, logs, compare.json)");
  emu->add_option("--policy", o->eo.launch.policy, "run: scheduling policy")->check(treefarm::cli_support::policy_check());
  emu->add_option("--policies", o->policies, "compare: all, or a comma-separated list")->capture_default_str()->check(cli_support::policies_check());
  emu->add_option("--calibration", o->eo.launch.calibration, "run/compare: calibration file")->check(CLI::ExistingFile);
  o->calibration_out = emu->add_option("--calibration-out", o->eo.calibration_out, "calibrate: file to write")->capture_default_str();
  emu->add_option("--migration", o->eo.launch.migration,
                  "run: task migration, off, pull or push (overrides [run] migration; inner workers pull from their children too, every worker pushes; docs/migration.md)")
      ->check(CLI::IsMember({"off", "pull", "push"}));
  emu->add_option("--balance", o->eo.launch.balance,
                  "run: queue balancing over the migration, off, tll or mll (overrides [run] balance; needs --migration pull or push; docs/migration.md)")
      ->check(CLI::IsMember({"off", "tll", "mll"}));
  emu->add_option("--buffer", o->eo.launch.buffer, "Buffer bound B in tasks");
  emu->add_option("--timeout", o->eo.launch.timeout, "seconds per run (0 = none)")->check(cli_support::non_negative_seconds());
  cli_support::exits_on_timeout(*emu);  // --timeout expired: exit 124
  emu->add_option("--prefix", o->eo.prefix, "Name prefix of what is created (default tf + 4 random hex digits)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            static const std::regex prefix("tf[0-9a-f]{4}");
            return std::regex_match(v, prefix) ? "" : "must be 'tf' and 4 lower-case hex digits (e.g. tf1a2b), got '" + v + "'";
          },
          "", ""));
  emu->add_option("--fault", o->faults,
                  "run: a network fault NODE:AT:DURATION:KIND (seconds; KIND loss=P, down or partition) on the link "
                  "between NODE and its parent; repeatable, beside the experiment's [[fault]] entries")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              (void)model::parse_fault_option(text);
              return "";
            } catch (const std::invalid_argument& e) {
              return e.what();
            }
          },
          "NODE:AT:DURATION:KIND", "fault"));
  emu->add_flag("--probe-links", o->eo.probe_links, "Measure every shaped link before the run");
  emu->add_flag("--encrypt", o->eo.launch.encrypt, "CURVE on every link");
  emu->add_flag("--quiet", o->eo.launch.quiet, "No progress lines");
  out.push_back({emu, [o] { return run_emulate(*o); }});
}

}  // namespace treefarm::cli
