#pragma once
/// @file SlurmHosts.hpp
/// `treefarm launch --slurm`: inside a Slurm allocation (salloc, sbatch), the hosts are
/// the allocation's nodes and every tree node runs as its own job step (`srun --nodes=1
/// --ntasks=1 --overlap -w HOST`), so Slurm accounts, signals and cleans them up
/// (docs/launch.md). The rest — placement, keys, logs, teardown — is launch_over_ssh's.

#include <string>
#include <vector>

#include "tools/deploy/HostsFile.hpp"

namespace treefarm::deploy {

/// The allocation's hosts: the node names of SLURM_JOB_NODELIST (expanded by `scontrol
/// show hostnames`), each with the address from its NodeAddr (`scontrol show node`).
/// `bin_dir` and `work_dir` apply to every host. Throws std::runtime_error if not inside
/// an allocation or scontrol fails.
HostsFile hosts_from_slurm(const std::string& bin_dir, const std::string& work_dir);

/// The srun command line that runs the shell command `command` on `host` as a one-task
/// job step sharing the allocation's CPUs with the others (--overlap), stdin forwarded.
std::vector<std::string> srun_argv(const Host& host, const std::string& command);

}  // namespace treefarm::deploy
