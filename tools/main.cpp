// treefarm: the user's command (docs/commands.md). Each subcommand lives in tools/cli/.
#include <CLI/CLI.hpp>

#include "runtime/cli/CliSupport.hpp"
#include "tasks/BlasKernel.hpp"
#include "tasks/PayloadMemory.hpp"
#include "tools/cli/Command.hpp"

int main(int argc, char** argv) {
  treefarm::tasks::select_blas_kernel(argv);  // before anything loads BLAS kernels (tasks/BlasKernel.hpp)
  treefarm::tasks::keep_payload_memory();    // freed payloads reused, not unmapped (tasks/PayloadMemory.hpp)
  CLI::App app{"treefarm: a task farm for multicore workstations on a LAN. A master and workers form a tree\n"
               "over ZeroMQ; bags of real matrix tasks flow down it; treefarm measures the throughput it\n"
               "achieves. See README.md and docs/commands.md."};
  app.require_subcommand(1);
  treefarm::cli_support::setup_app(app, "treefarm");
  treefarm::cli::Commands commands;
  treefarm::cli::add_all_commands(app, commands);
  return treefarm::cli_support::run_commands(app, commands, argc, argv);
}
