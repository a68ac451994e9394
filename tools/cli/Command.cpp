#include "tools/cli/Command.hpp"

namespace treefarm::cli {

void add_all_commands(CLI::App& app, Commands& out) {
  add_run_command(app, out);
  add_resubmit_command(app, out);
  add_launch_command(app, out);
  add_report_command(app, out);
  add_keygen_command(app, out);
  add_calibrate_command(app, out);
  add_predict_command(app, out);
  add_compare_command(app, out);
  add_submit_command(app, out);
  add_status_command(app, out);
  add_cancel_command(app, out);
  add_sweep_command(app, out);
  add_simulate_command(app, out);
  add_gen_platform_command(app, out);
  add_emulate_command(app, out);
  add_plan_command(app, out);
  add_gen_machines_command(app, out);
  add_probe_command(app, out);
  add_hwdetect_command(app, out);
  add_bench_command(app, out);
}

}  // namespace treefarm::cli
