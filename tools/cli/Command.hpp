// tools/cli: the `treefarm` subcommands, one file each (docs/commands.md).
#pragma once
#include <CLI/CLI.hpp>

#include "runtime/cli/CliSupport.hpp"

namespace treefarm::tools {
struct ServeEndpoint;
}

namespace treefarm::cli {

/// One registered subcommand and the list of them (runtime/cli/CliSupport.hpp).
using cli_support::Command;
using cli_support::Commands;
/// Set by SIGINT/SIGTERM; long-running commands poll it.
using cli_support::interrupted;
using cli_support::interrupt_signal;

// Each adds its subcommand(s) to `app` and its entry to `out` (one file per subcommand).
void add_run_command(CLI::App& app, Commands& out);
/// `treefarm run EXPERIMENT --out OUT --resume`: the tasks OUT/journal.tsv lacks (resubmit).
int rerun_missing(const std::string& experiment, const std::string& out_dir, bool quiet, double timeout);
/// `resubmit OUT --failed` (tools/cli/ResubmitCommand.cpp).
void add_resubmit_command(CLI::App& app, Commands& out);
void add_keygen_command(CLI::App& app, Commands& out);
void add_calibrate_command(CLI::App& app, Commands& out);
void add_predict_command(CLI::App& app, Commands& out);
void add_compare_command(CLI::App& app, Commands& out);
void add_simulate_command(CLI::App& app, Commands& out);
void add_gen_platform_command(CLI::App& app, Commands& out);
void add_emulate_command(CLI::App& app, Commands& out);
/// `plan` and `gen-machines` (runtime/plan, docs/planning.md).
void add_plan_command(CLI::App& app, Commands& out);
void add_gen_machines_command(CLI::App& app, Commands& out);
void add_hwdetect_command(CLI::App& app, Commands& out);
void add_bench_command(CLI::App& app, Commands& out);
/// `launch` over ssh (tools/deploy/).
void add_launch_command(CLI::App& app, Commands& out);
void add_sweep_command(CLI::App& app, Commands& out);
void add_report_command(CLI::App& app, Commands& out);
/// `probe`: MACHINES.toml measured on running workers (docs/machines-file.md).
void add_probe_command(CLI::App& app, Commands& out);
/// `submit`, `status` and `cancel` on a served tree (docs/serve.md).
void add_submit_command(CLI::App& app, Commands& out);
void add_status_command(CLI::App& app, Commands& out);
void add_cancel_command(CLI::App& app, Commands& out);

/// --to, --curve-secret, --server-key and --insecure: how a client reaches a served master
/// (submit, status, cancel, compare --to; defined in SubmitCommand.cpp).
void add_serve_endpoint_options(CLI::App& cmd, tools::ServeEndpoint& to, bool required);

/// Registers every subcommand above, in the order `treefarm --help` lists them.
void add_all_commands(CLI::App& app, Commands& out);

}  // namespace treefarm::cli
