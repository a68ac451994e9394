// lab: the `treefarm-lab` subcommands, one file each — the research studies (campaigns in
// simulation) and the peer benchmarks. Built and tested with the project, not installed.
#pragma once
#include <CLI/CLI.hpp>

#include "runtime/cli/CliSupport.hpp"

namespace treefarm::lab {

using cli_support::Command;
using cli_support::Commands;
using cli_support::interrupted;
using cli_support::interrupt_signal;

// Each adds its subcommand to `campaign` (the `treefarm-lab campaign` group) or to `app`,
// and its entry to `out`.
/// `campaign paper`: papers/beaumont2006 §5 in simulation (lab/campaign).
void add_paper_command(CLI::App& campaign, Commands& out);
/// `campaign lee2010`: papers/lee2010's job-level study (lab/lee2010).
void add_lee2010_command(CLI::App& campaign, Commands& out);
/// `campaign price`: the price policy's agents on random trees (lab/price).
void add_price_command(CLI::App& campaign, Commands& out);
/// `campaign plan`: the planners on generated multi-LAN sets (lab/planning).
void add_plan_study_command(CLI::App& campaign, Commands& out);
/// `peers`: treefarm beside Dask distributed and Work Queue (lab/peers).
void add_peers_command(CLI::App& app, Commands& out);

}  // namespace treefarm::lab
