// treefarm: the user's command (docs/commands.md). Each subcommand lives in tools/cli/.
#include <csignal>
#include <iostream>

#include <CLI/CLI.hpp>

#include "runtime/cli/CliSupport.hpp"
#include "tasks/BlasKernel.hpp"
#include "tasks/PayloadMemory.hpp"
#include "tools/cli/Command.hpp"

namespace {
void on_signal(int sig) {
  treefarm::cli::interrupt_signal() = sig;  // lock-free atomics: safe in a handler
  treefarm::cli::interrupted() = true;
}
}  // namespace

int main(int argc, char** argv) {
  treefarm::tasks::select_blas_kernel(argv);  // before anything loads BLAS kernels (issue 14)
  treefarm::tasks::keep_payload_memory();    // freed payloads reused, not unmapped (tasks/PayloadMemory.hpp)
  CLI::App app{"treefarm: a task farm for multicore workstations on a LAN. A master and workers form a tree\n"
               "over ZeroMQ; bags of real matrix tasks flow down it; treefarm measures the throughput it\n"
               "achieves. See README.md and docs/commands.md."};
  app.require_subcommand(1);
  namespace cs = treefarm::cli_support;
  cs::setup_app(app, "treefarm");
  treefarm::cli::Commands commands;
  treefarm::cli::add_all_commands(app, commands);
  for (auto* sub : app.get_subcommands({})) {
    sub->footer(cs::exit_code_footer());
    for (auto* subsub : sub->get_subcommands({})) subsub->footer(cs::exit_code_footer());
  }

  if (const auto rc = cs::parse(app, argc, argv)) return *rc;
  cs::setup_logging("info");  // logs on stderr; stdout is for results
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    for (const auto& c : commands)
      if (c.chosen ? c.chosen() : c.app->parsed()) return c.run();
  } catch (const std::exception& e) {
    return cs::report_error(e);
  }
  return 0;
}
