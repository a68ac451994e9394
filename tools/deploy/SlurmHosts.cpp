#include "tools/deploy/SlurmHosts.hpp"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "tools/deploy/ChildProcess.hpp"

namespace treefarm::deploy {

HostsFile hosts_from_slurm(const std::string& bin_dir, const std::string& work_dir) {
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  if (!list || !*list)
    throw std::runtime_error("--slurm: SLURM_JOB_NODELIST is not set; run inside an allocation "
                             "(salloc -N NODES treefarm launch ... --slurm, or from an sbatch script)");
  const auto [rc, names] = run_with_input({"scontrol", "show", "hostnames", list}, "", 30);
  if (rc != 0) throw std::runtime_error("--slurm: scontrol show hostnames " + std::string(list) + " failed: " + names);
  HostsFile hf{"SLURM_JOB_NODELIST", {}};
  std::istringstream in(names);
  for (std::string name; in >> name;) {
    Host h;
    h.name = name;
    h.address = name;
    h.bin_dir = bin_dir;
    h.work_dir = work_dir;
    const auto [nrc, node] = run_with_input({"scontrol", "-o", "show", "node", name}, "", 30);
    if (nrc == 0) {
      std::istringstream fields(node);
      for (std::string f; fields >> f;)
        if (f.rfind("NodeAddr=", 0) == 0 && f.size() > 9) h.address = f.substr(9);
    }
    hf.hosts.push_back(std::move(h));
  }
  if (hf.hosts.empty()) throw std::runtime_error("--slurm: the allocation has no node (SLURM_JOB_NODELIST=" + std::string(list) + ")");
  return hf;
}

std::vector<std::string> srun_argv(const Host& host, const std::string& command) {
  return {"srun", "--nodes=1", "--ntasks=1", "--overlap", "--quiet", "--nodelist=" + host.name, "--job-name=treefarm-launch",
          "--kill-on-bad-exit=0", "sh", "-c", command};
}

}  // namespace treefarm::deploy
