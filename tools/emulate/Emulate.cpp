#include "tools/emulate/Emulate.hpp"

#include <filesystem>

#include "tools/Compare.hpp"
#include "tools/HostCalibration.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "runtime/model/Experiment.hpp"
#include "tools/emulate/Program.hpp"
#include "tools/emulate/EventPlayer.hpp"
#include "tools/emulate/FaultPlayer.hpp"
#include "tools/emulate/LinkProbe.hpp"
#include "tools/emulate/Platform.hpp"
#include "tools/emulate/StateFile.hpp"

namespace treefarm::emulate {

namespace fs = std::filesystem;

namespace {
const char* const need_root = "treefarm emulate needs root: network namespaces, tc and cgroups";

std::string mbit(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f Mbit/s", bytes_per_s * 8 / 1e6);
  return buf;
}

void describe(const model::Experiment& ex, const Platform& p, std::ostream& out) {
  out << "treefarm emulate: platform " << p.prefix() << " (state: " << p.state_file() << ")\n";
  for (std::size_t i = 0; i < p.size(); ++i) {
    const auto& n = ex.nodes[i];
    out << "  " << n.name << ": netns " << p.netns(i);
    if (p.parent(i)) {
      out << ", " << p.address(i) << " <-> " << ex.nodes[*p.parent(i)].name << " " << p.parent_address(i) << ", ";
      out << (p.shape(i) ? "tbf " + mbit(p.shape(i)->rate) : std::string("unshaped"));
    }
    if (n.cpu_quota) out << ", cpu_quota " << *n.cpu_quota;
    if (!n.cpuset.empty()) out << ", cpuset " << n.cpuset;
    out << "\n";
  }
}

/// The prefix of an emulation name ("tf1a2b-n3" -> "tf1a2b").
std::string prefix_of(const std::string& name) { return name.substr(0, 6); }

bool owned_by_live_platform(const std::string& prefix, const std::string& state_dir) {
  const auto path = fs::path(state_dir) / (prefix + ".state");
  if (!fs::exists(path)) return false;
  return StateFile::owner_alive(StateFile::read(path.string()));
}
}  // namespace

std::string emulation_unavailable() {
  if (geteuid() != 0) return need_root;
  std::random_device rd;
  char name[16];
  std::snprintf(name, sizeof name, "tf%04x-n0", static_cast<unsigned>(rd() & 0xffff));
  if (fs::exists(std::string("/run/netns/") + name)) return "";  // someone's namespace: evidently they work
  const auto r = run_program({"ip", "netns", "add", name});
  if (r.exit_code != 0) return std::string("cannot create a network namespace: ") + ProgramError({"ip", "netns", "add", name}, r).what();
  run_program({"ip", "netns", "del", name});
  return "";
}

int emulate_command(const std::string& experiment, const std::string& mode, const EmulateOptions& options,
                    const std::atomic<bool>& interrupted) {
  if (mode != "run" && mode != "calibrate" && mode != "compare")
    throw std::invalid_argument("treefarm emulate: mode must be run, calibrate or compare, got '" + mode + "'");
  if (geteuid() != 0) throw EmulateError(need_root);

  const auto ex = model::load_experiment(experiment);
  std::ostream& log = std::cerr;
  for (const auto& n : ex.nodes)
    if (n.latency > 0)
      log << "treefarm emulate: note: latency of node '" << n.name << "' (" << n.latency
          << " s) is not emulated: netem is not available in this kernel; only bandwidth is shaped\n";

  // Network faults ([[fault]] and --fault): checked against the tree before anything is built.
  auto faults_of_run = model::load_faults(experiment, ex);
  faults_of_run.insert(faults_of_run.end(), options.faults.begin(), options.faults.end());
  std::stable_sort(faults_of_run.begin(), faults_of_run.end(), [](const auto& a, const auto& b) { return a.at < b.at; });
  for (std::size_t k = 0; k < faults_of_run.size(); ++k)
    if (const auto problem = model::check_fault(faults_of_run[k], {faults_of_run.begin(), faults_of_run.begin() + static_cast<std::ptrdiff_t>(k)}, ex))
      throw std::invalid_argument(faults_of_run[k].where + ": field '" + problem->key + "': " + problem->message);

  PlatformOptions po;
  po.prefix = options.prefix;
  std::optional<Platform> platform;
  try {
    platform.emplace(ex, po, &interrupted);
  } catch (const SetupInterrupted&) {
    log << "treefarm emulate: interrupted during setup; everything created was removed\n";
    return 130;
  }
  const Platform& p = *platform;
  if (!options.launch.quiet) describe(ex, p, log);

  if (options.probe_links) {
    for (std::size_t i = 1; i < p.size(); ++i) {
      if (interrupted) break;
      if (!p.shape(i)) continue;
      const double rate = p.shape(i)->rate;
      const auto bytes = static_cast<std::uint64_t>(std::clamp(rate * 2.0, 1.0 * (1 << 20), 256.0 * (1 << 20)));
      const double down = measure_link(p, i, bytes, Direction::down);
      const double up = measure_link(p, i, bytes, Direction::up);
      log << "  link to " << ex.nodes[i].name << ": tbf " << mbit(rate) << ", measured down " << mbit(down) << " ("
          << static_cast<int>(100 * down / rate + 0.5) << "%), up " << mbit(up) << " ("
          << static_cast<int>(100 * up / rate + 0.5) << "%)\n";
    }
  }

  tools::LaunchOptions lo = options.launch;
  if (!lo.encrypt) {
    // The links exist only between namespaces this tool created: nothing outside this
    // machine can reach them, so plain TCP is as private as loopback.
    lo.master_args.push_back("--insecure");
    lo.worker_args.push_back("--insecure");
  }
  const std::string bin_dir = options.bin_dir;
  lo.bin_dir = bin_dir;  // also for the host calibration's own measuring tree (calibrate_emulated_hosts)
  lo.wrap = [&p, bin_dir](std::size_t i) { return p.wrap(i, bin_dir); };
  lo.listen = [&p](std::size_t i) { return p.listen_endpoint(i); };
  lo.parent_endpoint = [&p](std::size_t i, const std::string& bound) { return p.parent_endpoint(i, bound); };
  lo.node_cpu_seconds = [&p](std::size_t i) { return p.cpu_seconds(i); };
  int rc = 130;
  if (interrupted) {
  } else if (mode == "run") {
    // `[[event]]`s and faults: checked before anything starts, played from the launch on.
    std::optional<EventPlayer> events;
    std::optional<FaultPlayer> faults;
    try {
      events.emplace(ex, p, log);
      faults.emplace(ex, faults_of_run, p, log);
    } catch (const PlatformError& e) {
      log << "treefarm emulate: " << e.what() << "\n";
      platform->teardown();
      return 2;
    }
    events->start();
    faults->start();
    rc = tools::launch_tree(ex, lo, interrupted);
    events->stop();
    faults->stop();
    if (faults->started() > 0 && !options.launch.quiet)
      log << "treefarm emulate: " << faults->started() << " fault(s) played, " << faults->ended() << " ended\n";
    if (!faults->problems().empty() && rc == 0) rc = 1;
  } else if (mode == "calibrate") {
    const std::string file = std::filesystem::absolute(options.calibration_out).string();
    auto calibrating = lo;
    calibrating.master_args.insert(calibrating.master_args.end(), {"--calibrate-out", file});
    rc = tools::launch_tree(ex, calibrating, interrupted);
    if (rc == 0 && std::filesystem::exists(file)) tools::calibrate_emulated_hosts(ex, file, lo, log);
  } else {
    tools::CompareOptions co;
    co.policies = options.policies;
    co.calibration = options.launch.calibration;
    co.out_dir = options.launch.out_dir;
    co.launch = lo;
    co.launch.calibration.clear();
    co.after = [&](const std::string& dir, std::ostream& out) {
      tools::print_link_usage(out, ex, dir, [&p](std::size_t i) { return p.shape(i) ? p.shape(i)->rate : 0.0; });
    };
    rc = tools::compare_policies(ex, co, [&](const tools::LaunchOptions& l) { return tools::launch_tree(ex, l, interrupted); },
                                 std::cout);
  }

  const auto problems = platform->teardown();
  for (const auto& problem : problems) log << "treefarm emulate: " << problem << "\n";
  if (!options.launch.quiet && problems.empty()) log << "treefarm emulate: platform " << p.prefix() << " removed\n";
  return rc;
}

int emulate_cleanup(std::ostream& out) {
  if (geteuid() != 0) {
    out << need_root << "\n";
    return 1;
  }
  const std::string dir = StateFile::default_dir();
  int failures = 0, removed = 0;
  const auto report = [&](const std::string& what, const std::string& problem) {
    if (problem.empty()) {
      out << "removed " << what << "\n";
      ++removed;
    } else {
      out << "could not remove " << what << ": " << problem << "\n";
      ++failures;
    }
  };

  // 1. What the state files of dead owners list.
  for (const auto& path : StateFile::list(dir)) {
    const auto c = StateFile::read(path);
    if (StateFile::owner_alive(c)) {
      out << "keeping " << c.prefix << ": its owner (pid " << c.owner << ") still runs\n";
      continue;
    }
    const int before = failures;
    for (auto it = c.items.rbegin(); it != c.items.rend(); ++it) {
      if (it->first == "netns" && fs::exists("/run/netns/" + it->second))
        report("network namespace " + it->second, Platform::remove_netns(it->second));
      else if (it->first == "cgroup" && fs::exists(it->second))
        report("control group " + it->second, remove_cgroup(it->second));
    }
    if (failures == before) {
      std::error_code ec;
      fs::remove(path, ec);
      out << "removed state file " << path << "\n";
    }
  }

  // 2. A sweep for anything named like ours that no running platform owns.
  const auto orphan = [&](const std::string& name) {
    return Platform::is_emulation_name(name) && !owned_by_live_platform(prefix_of(name), dir);
  };
  {
    std::istringstream in(run_program({"ip", "netns", "list"}).out);
    std::string line;
    while (std::getline(in, line)) {
      const std::string name = line.substr(0, line.find(' '));
      if (orphan(name)) report("network namespace " + name, Platform::remove_netns(name));
    }
  }
  {
    std::istringstream in(run_program({"ip", "-o", "link", "show"}).out);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string index, name;
      fields >> index >> name;
      name = name.substr(0, name.find_first_of("@:"));
      if (!orphan(name)) continue;
      const auto r = run_program({"ip", "link", "del", name});
      report("veth " + name, r.exit_code == 0 ? "" : ProgramError({"ip", "link", "del", name}, r).what());
    }
  }
  const auto mounts = CgroupMounts::detect();
  std::set<std::string> roots;
  for (const auto& r : {mounts.cpu, mounts.cpuset})
    if (!r.empty()) roots.insert(r);
  for (const auto& root : roots) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const auto name = e.path().filename().string();
      if (e.is_directory() && orphan(name)) report("control group " + e.path().string(), remove_cgroup(e.path().string()));
    }
  }
  if (removed == 0 && failures == 0) out << "nothing to clean up\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace treefarm::emulate
