#include "tests/support/TreeToml.hpp"

namespace treefarm::test_support {
namespace {
std::string quoted_key(const std::string& key, const std::string& value) {
  return value.empty() ? std::string() : key + " = \"" + value + "\"\n";
}
}  // namespace

std::string node_toml(const std::string& name, const std::string& parent, std::uint32_t cores,
                      const std::string& keys) {
  std::string t = "[[node]]\nname = \"" + name + "\"\n";
  if (!parent.empty()) t += "parent = \"" + parent + "\"\n";
  return t + "cores = " + std::to_string(cores) + "\n" + keys;
}

std::string star_nodes_toml(std::uint32_t workers, std::uint32_t cores) {
  std::string t = node_toml("master", "", 0);
  for (std::uint32_t i = 1; i <= workers; ++i) t += node_toml("w" + std::to_string(i), "master", cores);
  return t;
}

std::string quickstart_nodes_toml() {
  return star_nodes_toml(2) + node_toml("w1a", "w1", 1) + node_toml("w1b", "w1", 1);
}

std::string quickstart_apps_toml(std::uint64_t mm_tasks, std::uint64_t ma_tasks) {
  return "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 384\nweight = 1\ntasks = " + std::to_string(mm_tasks) +
         "\n[[app]]\nname = \"ma\"\nkernel = \"matadd\"\nn = 512\nweight = 2\ntasks = " + std::to_string(ma_tasks) + "\n";
}

std::string small_star_toml(const std::vector<StarWorker>& workers) {
  std::string t = node_toml("m", "", 0);
  for (const auto& w : workers)
    t += node_toml(w.name, "m", w.cores,
                   quoted_key("speed", w.speed) + quoted_key("bandwidth", w.bandwidth) + quoted_key("latency", w.latency));
  return t;
}

std::string synthetic_app_toml(const std::string& name, const std::string& bytes, const std::string& flops,
                               std::uint64_t tasks, const std::string& keys) {
  return "[[app]]\nname = \"" + name + "\"\n" + quoted_key("bytes", bytes) + quoted_key("flops", flops) +
         "tasks = " + std::to_string(tasks) + "\n" + keys;
}

std::string multiport_run_toml(std::uint32_t buffer, const std::string& policy) {
  std::string t = "[run]\nbuffer = " + std::to_string(buffer) + "\n";
  if (!policy.empty()) t += "policy = \"" + policy + "\"\n";
  return t + "comm_model = \"multi-port\"\n";
}

}  // namespace treefarm::test_support
