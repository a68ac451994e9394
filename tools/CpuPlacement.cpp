#include "tools/CpuPlacement.hpp"

#include <algorithm>

#include "runtime/exec/CpuList.hpp"

namespace treefarm::tools {

std::vector<std::string> NodeCpus::worker_args() const {
  if (cpus.empty()) return {"--cores", "0"};
  if (shared) return {"--cpus", cpus, "--cores", std::to_string(cores)};
  return {"--cpus", cpus};
}

std::vector<NodeCpus> assign_cpus(const model::Experiment& ex, const std::vector<int>& usable) {
  const auto asked = [&](const model::NodeSpec& n) {
    return n.cpuset.empty() ? std::min<std::size_t>(n.cores, usable.size()) : std::size_t{0};
  };
  std::size_t demand = 0;
  for (const auto& node : ex.nodes) demand += asked(node);
  const bool wraps = demand > usable.size();
  std::vector<NodeCpus> out;
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
    const auto& node = ex.nodes[i];
    if (!node.cpuset.empty()) {
      out.push_back({node.cpuset, static_cast<std::uint32_t>(exec::parse_cpu_list(node.cpuset).size()), false});
      continue;
    }
    const std::size_t want = asked(node);
    if (want == 0) {
      out.push_back({});
      continue;
    }
    if (wraps && i > 0 && want < usable.size()) {
      out.push_back({exec::format_cpu_list(usable), static_cast<std::uint32_t>(want), true});
      continue;
    }
    std::vector<int> mine;
    for (std::size_t c = 0; c < want; ++c) mine.push_back(usable[cursor++ % usable.size()]);
    std::sort(mine.begin(), mine.end());
    out.push_back({exec::format_cpu_list(mine), static_cast<std::uint32_t>(mine.size()), false});
  }
  return out;
}

std::vector<std::string> cpu_lists(const std::vector<NodeCpus>& placement) {
  std::vector<std::string> out;
  for (const auto& p : placement) out.push_back(p.cpus);
  return out;
}

std::string shared_cpus_note(const model::Experiment& ex, const std::vector<NodeCpus>& placement, std::size_t usable) {
  std::string names, cpus;
  std::size_t asked = 0;
  for (std::size_t i = 0; i < placement.size() && i < ex.nodes.size(); ++i) {
    if (ex.nodes[i].cpuset.empty()) asked += placement[i].cores;
    if (!placement[i].shared) continue;
    names += (names.empty() ? "" : ", ") + ex.nodes[i].name;
    cpus = placement[i].cpus;
  }
  if (names.empty()) return "";
  return "the nodes ask " + std::to_string(asked) + " cores of this machine's " + std::to_string(usable) +
         " usable CPUs: " + names + " compute on CPUs " + cpus + " together, each on its cores' worth, not pinned";
}

}  // namespace treefarm::tools
