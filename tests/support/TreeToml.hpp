#pragma once
/// @file TreeToml.hpp
/// Experiment-file pieces the tests share (docs/experiment-file.md): the trees and
/// applications many tests run, written once.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace treefarm::test_support {

/// One `[[node]]` table: `name`, `parent` unless empty, `cores`, then `keys` (TOML lines
/// as the file writes them, e.g. "speed = \"1Gf\"\n").
std::string node_toml(const std::string& name, const std::string& parent, std::uint32_t cores,
                      const std::string& keys = "");

/// `[[node]]` tables: a master that only forwards (cores = 0) and `workers` children
/// w1..wN under it, `cores` each.
std::string star_nodes_toml(std::uint32_t workers, std::uint32_t cores = 1);

/// `[[node]]` tables of the quickstart's tree (examples/quickstart.toml): the master
/// (cores = 0), w1 and w2 under it, w1a and w1b under w1, one core each.
std::string quickstart_nodes_toml();

/// `[[app]]` tables of the quickstart's two applications — "mm" (matmul, n = 384,
/// weight 1) and "ma" (matadd, n = 512, weight 2) — with these task counts.
std::string quickstart_apps_toml(std::uint64_t mm_tasks, std::uint64_t ma_tasks);

/// A worker of small_star_toml(): its name, what the file declares for it as the file
/// writes it (speed "1Gf", bandwidth "100MBps", latency "1ms"; an empty one is not
/// written), and its cores.
struct StarWorker {
  StarWorker(std::string worker = "w", std::string worker_speed = "", std::string link_bandwidth = "",
             std::string link_latency = "", std::uint32_t worker_cores = 1)
      : name(std::move(worker)), speed(std::move(worker_speed)), bandwidth(std::move(link_bandwidth)),
        latency(std::move(link_latency)), cores(worker_cores) {}
  std::string name;
  std::string speed;
  std::string bandwidth;
  std::string latency;
  std::uint32_t cores;
};

/// `[[node]]` tables of the small stars of the model and simulation tests: a master "m"
/// that only forwards (cores = 0) and `workers` under it, in order.
std::string small_star_toml(const std::vector<StarWorker>& workers);

/// An `[[app]]` table of a synthetic application (docs/experiment-file.md): `bytes` of
/// input and `flops` per task as the file writes them ("1MB", "100Mf"), `tasks` tasks,
/// then `keys` (TOML lines, e.g. "weight = 10\n").
std::string synthetic_app_toml(const std::string& name, const std::string& bytes, const std::string& flops,
                               std::uint64_t tasks, const std::string& keys = "");

/// A `[run]` table: this buffer, the multi-port model, and `policy` unless empty.
std::string multiport_run_toml(std::uint32_t buffer, const std::string& policy = "");

}  // namespace treefarm::test_support
