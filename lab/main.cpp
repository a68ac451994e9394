// treefarm-lab: the research studies and peer benchmarks of treefarm (docs/results/).
// Built beside `treefarm`, not installed; its subcommands live in lab/*Command.cpp.
#include <CLI/CLI.hpp>

#include "lab/LabCommands.hpp"
#include "runtime/cli/CliSupport.hpp"
#include "tasks/BlasKernel.hpp"

int main(int argc, char** argv) {
  treefarm::tasks::select_blas_kernel(argv);  // before anything loads BLAS kernels (tasks/BlasKernel.hpp)
  CLI::App app{"treefarm-lab: the research studies (campaigns in simulation) and the peer benchmarks of\n"
               "treefarm. Results pages: docs/results/."};
  app.require_subcommand(1);
  treefarm::cli_support::setup_app(app, "treefarm-lab");
  treefarm::lab::Commands commands;
  auto* campaign = app.add_subcommand("campaign", "Reproduce a published experiment in simulation");
  campaign->require_subcommand(1);
  treefarm::lab::add_paper_command(*campaign, commands);
  treefarm::lab::add_lee2010_command(*campaign, commands);
  treefarm::lab::add_price_command(*campaign, commands);
  treefarm::lab::add_plan_study_command(*campaign, commands);
  treefarm::lab::add_peers_command(app, commands);
  return treefarm::cli_support::run_commands(app, commands, argc, argv);
}
