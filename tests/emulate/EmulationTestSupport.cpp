#include "tests/emulate/EmulationTestSupport.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tools/emulate/Cgroups.hpp"
#include "tools/emulate/Program.hpp"
#include "tools/emulate/Emulate.hpp"
#include "tools/emulate/StateFile.hpp"

namespace treefarm::emulate::testing {

namespace fs = std::filesystem;

const std::string& unavailable_reason() {
  static const std::string why = emulation_unavailable();
  return why;
}

std::string fresh_prefix() {
  std::random_device rd;
  for (;;) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "tf%04x", static_cast<unsigned>(rd() & 0xffff));
    const std::string p = buf;
    if (leftovers(p).empty()) return p;
  }
}

std::vector<std::string> leftovers(const std::string& prefix) {
  std::vector<std::string> found;
  const std::string dash = prefix + "-";
  const auto scan = [&](const std::vector<std::string>& cmd, const std::string& what) {
    std::istringstream in(run_program(cmd).out);
    std::string line;
    while (std::getline(in, line))
      if (line.find(dash) != std::string::npos) found.push_back(what + ": " + line);
  };
  scan({"ip", "netns", "list"}, "netns");
  scan({"ip", "-o", "link", "show"}, "link");
  scan({"tc", "qdisc", "show"}, "qdisc");
  {  // network faults are made only inside the platform's namespaces, never here
    std::istringstream in(run_program({"nft", "list", "tables"}).out);
    std::string line;
    while (std::getline(in, line))
      if (line.find("treefarm_fault") != std::string::npos) found.push_back("nft table in this namespace: " + line);
  }
  const auto mounts = CgroupMounts::detect();
  for (const auto& root : {mounts.cpu, mounts.cpuset}) {
    if (root.empty()) continue;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.path().filename().string().rfind(dash, 0) == 0) found.push_back("cgroup: " + e.path().string());
  }
  const auto state = fs::path(StateFile::default_dir()) / (prefix + ".state");
  if (fs::exists(state)) found.push_back("state file: " + state.string());
  return found;
}

model::Experiment experiment(const std::string& toml) { return model::parse_experiment(toml, "<test>"); }

EmulationRun::EmulationRun(const std::string& toml, double timeout)
    : file((dir.path() / "star.toml").string()), prefix(fresh_prefix()) {
  std::ofstream(file) << toml;
  options.bin_dir = TREEFARM_BIN_DIR;
  options.prefix = prefix;
  options.launch.out_dir = out().string();
  options.launch.timeout = timeout;
  options.launch.quiet = true;
  options.launch.log_level = "warn";
}

}  // namespace treefarm::emulate::testing
