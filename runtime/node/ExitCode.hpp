#pragma once
/// @file ExitCode.hpp
/// The exit codes of every treefarm executable (`treefarm`, `treefarm-master`,
/// `treefarm-worker`): one table, printed in each `--help` and in docs/commands.md.
/// Pure (no includes): the node driver, the adapters and the command lines share it.

namespace treefarm::node {

/// A process's exit code (docs/commands.md, "Exit codes").
enum ExitCode : int {
  exit_ok = 0,            ///< Done: every task completed exactly once with the right result.
  exit_error = 1,         ///< The run failed (a node failed, I/O error, calibration incomplete).
  exit_usage = 2,         ///< Bad command line (unknown option, bad value, missing argument).
  exit_bad_input = 3,     ///< Bad input file (experiment, calibration, keys): names file, line, field.
  exit_wrong_results = 4, ///< The run ended but tasks were lost, wrong or failed (plan: QoS not met).
  exit_parent_lost = 5,   ///< Worker: its parent went away and did not come back.
  exit_timeout = 124,     ///< `--timeout` expired (as timeout(1)).
  exit_interrupted = 130, ///< Interrupted (SIGINT, Ctrl-C; 128 + 2 as the shells do).
};

/// One row of the exit-code table.
struct ExitCodeRow {
  int code;
  const char* meaning;
};

/// The table, in code order: the `--help` footer of the three executables (hence their
/// man pages, made by help2man) and docs/commands.md's "Exit codes" table, which a test
/// compares with it row by row.
inline constexpr ExitCodeRow exit_code_table[] = {
    {exit_ok, "success: every task completed exactly once with the right result"},
    {exit_error, "run failed: a node failed, an I/O error (an --out that cannot be written), a calibration incomplete"},
    {exit_usage, "usage error: unknown command or option, bad value, missing argument, options that exclude or need each other"},
    {exit_bad_input, "bad input file: experiment, calibration (or one of another experiment), results, machines or key file; the message names file, line and field"},
    {exit_wrong_results, "wrong results: the run ended but tasks were lost, wrong or failed; treefarm plan: the QoS is not met"},
    {exit_parent_lost, "treefarm-worker: its parent went away (or was never reached) and did not come back within --rejoin-timeout"},
    {exit_timeout, "--timeout expired (as timeout(1)): treefarm run, launch, emulate, sweep and compare"},
    {exit_interrupted, "interrupted: SIGINT (Ctrl-C) or SIGTERM; nothing half-written is left (treefarm-worker: SIGTERM gives 0; treefarm-lab campaign: SIGTERM gives 143)"},
};

}  // namespace treefarm::node
