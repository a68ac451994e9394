// treefarm-lab peers (docs/commands/lab.md, docs/results/peers.md).
#include <cstdint>
#include <iostream>
#include <memory>

#include "lab/LabCommands.hpp"
#include "lab/peers/PeersBench.hpp"

namespace treefarm::lab {

void add_peers_command(CLI::App& app, Commands& out) {
  auto* cmd = app.add_subcommand("peers", "No-op and matmul bags on treefarm beside Dask distributed and Work Queue, same worker count");
  auto pbo = std::make_shared<peers::PeersBenchOptions>();
  cmd->add_option("--workers", pbo->workers, "Worker processes, 1 core each, for everyone")->capture_default_str();
  cmd->add_option("--peers", pbo->peers, "Comma-separated: dask, workqueue")->capture_default_str();
  cmd
      ->add_option_function<std::uint64_t>(
          "--tasks", [pbo](std::uint64_t n) { pbo->treefarm_noop_tasks = pbo->peer_noop_tasks = n; },
          "No-op tasks for treefarm and for each peer alike (sets both counts below)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--treefarm-noop-tasks", pbo->treefarm_noop_tasks, "No-op tasks run by treefarm")->capture_default_str();
  cmd->add_option("--peer-noop-tasks", pbo->peer_noop_tasks, "No-op tasks run by each peer")->capture_default_str();
  cmd->add_option("--matmul-n", pbo->matmul_n, "Matrix order of the matmul tasks")->capture_default_str();
  cmd->add_option("--treefarm-matmul-tasks", pbo->treefarm_matmul_tasks, "matmul tasks run by treefarm")->capture_default_str();
  cmd->add_option("--peer-matmul-tasks", pbo->peer_matmul_tasks, "matmul tasks run by each peer")->capture_default_str();
  cmd->add_option("--timeout", pbo->timeout, "seconds per run")->capture_default_str();
  cmd->add_flag("--json", pbo->json, "JSON output");
  out.push_back({cmd, [pbo] { return peers::bench_peers(std::cout, *pbo); }});
}

}  // namespace treefarm::lab
