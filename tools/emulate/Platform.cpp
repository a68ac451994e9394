#include "tools/emulate/Platform.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>

#include "tools/emulate/Program.hpp"

namespace treefarm::emulate {

namespace fs = std::filesystem;

// ---- TbfShape ----------------------------------------------------------------------

TbfShape TbfShape::for_rate(double bytes_per_second) {
  if (!(bytes_per_second > 0) || !std::isfinite(bytes_per_second))
    throw std::invalid_argument("tbf rate must be a positive number of bytes/s, got " + std::to_string(bytes_per_second));
  TbfShape s;
  s.rate = bytes_per_second;
  // The bucket must hold at least one full-size packet (GSO packets larger than it are
  // segmented by tbf); 10 ms at the rate keeps the timer's granularity out of the way.
  s.burst = std::max<std::uint64_t>(32 * 1024, static_cast<std::uint64_t>(std::ceil(bytes_per_second * 0.010)));
  s.latency = 0.05;
  return s;
}

std::vector<std::string> TbfShape::tc_args() const {
  const auto bits = static_cast<std::uint64_t>(std::llround(rate * 8.0));
  const auto latency_us = static_cast<std::uint64_t>(std::llround(latency * 1e6));
  return {"tbf", "rate", std::to_string(bits) + "bit", "burst", std::to_string(burst), "latency",
          std::to_string(latency_us) + "us"};
}

// ---- names and addresses -------------------------------------------------------------

std::string Platform::edge_address(std::size_t child, bool parent_side) {
  if (child == 0 || child > 16384)
    throw std::invalid_argument("edge_address: child index must be 1..16384 (10.213.0.0/16 in /30s), got " +
                                std::to_string(child));
  const std::size_t base = 4 * (child - 1);
  return "10.213." + std::to_string(base / 256) + "." + std::to_string(base % 256 + (parent_side ? 1 : 2));
}

bool Platform::is_emulation_name(const std::string& name) {
  static const std::regex re("^tf[0-9a-f]{4}-(n[0-9]+|e[0-9]+[pc])$");
  return std::regex_match(name, re);
}

namespace {
bool valid_prefix(const std::string& p) {
  static const std::regex re("^tf[0-9a-f]{4}$");
  return std::regex_match(p, re);
}

bool prefix_in_use(const std::string& prefix, const std::string& state_dir) {
  return fs::exists(fs::path(state_dir) / (prefix + ".state")) || fs::exists("/run/netns/" + prefix + "-n0");
}

std::string random_prefix(const std::string& state_dir) {
  std::random_device rd;
  for (int attempt = 0; attempt < 200; ++attempt) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "tf%04x", static_cast<unsigned>(rd() & 0xffff));
    if (!prefix_in_use(buf, state_dir)) return buf;
  }
  throw PlatformError("no unused emulation prefix left (run `treefarm emulate --cleanup`)");
}

std::string port_of(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon + 1 >= endpoint.size())
    throw std::invalid_argument("endpoint without a port: '" + endpoint + "'");
  return endpoint.substr(colon + 1);
}

std::string shell_quote(const std::string& s) {
  if (s.find('\'') != std::string::npos)
    throw std::invalid_argument("path must not contain a single quote: " + s);
  return "'" + s + "'";
}
}  // namespace

// ---- setup and teardown --------------------------------------------------------------

Platform::Platform(const model::Experiment& ex, PlatformOptions options, const std::atomic<bool>* interrupted)
    : options_(std::move(options)) {
  if (options_.state_dir.empty()) options_.state_dir = StateFile::default_dir();
  if (!options_.prefix.empty() && !valid_prefix(options_.prefix))
    throw std::invalid_argument("emulation prefix must be 'tf' and 4 lower-case hex digits (e.g. tf1a2b), got '" +
                                options_.prefix + "'");
  if (ex.nodes.size() > 16385)
    throw std::invalid_argument("an emulated platform has at most 16385 nodes (10.213.0.0/16 in /30s), got " +
                                std::to_string(ex.nodes.size()));
  prefix_ = options_.prefix.empty() ? random_prefix(options_.state_dir) : options_.prefix;
  try {
    state_.emplace(options_.state_dir, prefix_);
  } catch (const std::exception& e) {
    throw PlatformError("emulation prefix " + prefix_ + " is in use or its state file cannot be written: " + e.what());
  }
  state_path_ = state_->path();
  try {
    setup(ex, interrupted);
  } catch (const SetupInterrupted&) {
    teardown();
    throw;
  } catch (const std::exception& e) {
    const auto problems = teardown();
    std::string what = "cannot set up the emulated platform: " + std::string(e.what());
    for (const auto& p : problems) what += "\n  (while removing it again: " + p + ")";
    throw PlatformError(what);
  }
}

Platform::~Platform() {
  for (const auto& p : teardown()) std::cerr << "treefarm emulate: " << p << "\n";
}

void Platform::setup(const model::Experiment& ex, const std::atomic<bool>* interrupted) {
  const auto check = [&] {
    if (interrupted && interrupted->load()) throw SetupInterrupted();
  };
  nodes_.resize(ex.nodes.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& n = nodes_[i];
    n.netns = prefix_ + "-n" + std::to_string(i);
    n.parent = ex.parent_index(i);
    if (!n.parent) continue;
    n.address = edge_address(i, false);
    n.parent_address = edge_address(i, true);
    n.device = prefix_ + "-e" + std::to_string(i) + "c";
    n.parent_device = prefix_ + "-e" + std::to_string(i) + "p";
    if (ex.nodes[i].bandwidth) n.shape = TbfShape::for_rate(*ex.nodes[i].bandwidth);
  }

  for (const auto& n : nodes_) {
    check();
    state_->record("netns", n.netns);
    created_netns_.push_back(n.netns);
    run_checked({"ip", "netns", "add", n.netns});
    run_checked({"ip", "-n", n.netns, "link", "set", "lo", "up"});
  }

  for (std::size_t i = 1; i < nodes_.size(); ++i) {
    check();
    const auto& n = nodes_[i];
    const auto& up = nodes_[*n.parent].netns;
    run_checked({"ip", "link", "add", n.parent_device, "netns", up, "type", "veth", "peer", "name", n.device, "netns",
                 n.netns});
    run_checked({"ip", "-n", up, "addr", "add", n.parent_address + "/30", "dev", n.parent_device});
    run_checked({"ip", "-n", n.netns, "addr", "add", n.address + "/30", "dev", n.device});
    if (n.shape) {
      auto down_cmd = std::vector<std::string>{"tc", "-n", up, "qdisc", "add", "dev", n.parent_device, "root"};
      auto up_cmd = std::vector<std::string>{"tc", "-n", n.netns, "qdisc", "add", "dev", n.device, "root"};
      for (const auto& a : n.shape->tc_args()) {
        down_cmd.push_back(a);
        up_cmd.push_back(a);
      }
      run_checked(down_cmd);
      run_checked(up_cmd);
    }
    run_checked({"ip", "-n", up, "link", "set", n.parent_device, "up"});
    run_checked({"ip", "-n", n.netns, "link", "set", n.device, "up"});
  }

  std::optional<CgroupMounts> mounts;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    check();
    const auto& spec = ex.nodes[i];
    CpuLimits limits{spec.cpu_quota, spec.cpuset};
    if (!mounts) mounts = CgroupMounts::detect();
    const auto record = [&](const std::string& dir) {
      state_->record("cgroup", dir);
      created_cgroups_.push_back(dir);
    };
    try {
      nodes_[i].cgroups = create_cgroups(*mounts, nodes_[i].netns, limits, record);
      // Every node's CPU time is counted (cpu_seconds(): its whole cost per task).
      nodes_[i].accounting = create_accounting_cgroup(*mounts, nodes_[i].netns, nodes_[i].cgroups, record);
      if (!nodes_[i].accounting.empty() &&
          std::find(nodes_[i].cgroups.begin(), nodes_[i].cgroups.end(), nodes_[i].accounting) == nodes_[i].cgroups.end())
        nodes_[i].cgroups.push_back(nodes_[i].accounting);
    } catch (const std::exception& e) {
      throw PlatformError("node '" + spec.name + "': " + e.what());
    }
  }
}

std::optional<double> Platform::cpu_seconds(std::size_t i) const {
  const auto& dir = nodes_.at(i).accounting;
  if (dir.empty()) return std::nullopt;
  return cgroup_cpu_seconds(dir);
}

void Platform::set_cpu_quota(std::size_t i, double quota) const {
  for (const auto& dir : nodes_.at(i).cgroups)
    if (emulate::set_cpu_quota(dir, quota)) return;
  throw PlatformError("node " + std::to_string(i) + " (" + nodes_.at(i).netns +
                      ") has no CPU quota group: give it a cpu_quota in the experiment to change it later");
}

void Platform::set_bandwidth(std::size_t i, double bytes_per_second) const {
  const Node& n = nodes_.at(i);
  if (!n.parent || !n.shape)
    throw PlatformError("the link to node " + std::to_string(i) + " (" + n.netns +
                        ") is not shaped: give the node a bandwidth in the experiment to change it later");
  const TbfShape shape = TbfShape::for_rate(bytes_per_second);
  auto down_cmd = std::vector<std::string>{"tc", "-n", nodes_.at(*n.parent).netns, "qdisc", "change", "dev", n.parent_device, "root"};
  auto up_cmd = std::vector<std::string>{"tc", "-n", n.netns, "qdisc", "change", "dev", n.device, "root"};
  for (const auto& a : shape.tc_args()) {
    down_cmd.push_back(a);
    up_cmd.push_back(a);
  }
  for (const auto& cmd : {down_cmd, up_cmd}) {
    const auto r = run_program(cmd);
    if (r.exit_code != 0) throw PlatformError(ProgramError(cmd, r).what());
  }
}

std::string Platform::remove_netns(const std::string& name) {
  if (!fs::exists("/run/netns/" + name)) return "";
  const auto pids = run_program({"ip", "netns", "pids", name});
  std::istringstream in(pids.out);
  pid_t pid;
  while (in >> pid) ::kill(pid, SIGKILL);
  const auto r = run_program({"ip", "netns", "del", name});
  if (r.exit_code != 0 && fs::exists("/run/netns/" + name))
    return ProgramError({"ip", "netns", "del", name}, r).what();
  return "";
}

std::vector<std::string> Platform::teardown() {
  std::vector<std::string> problems;
  // Namespaces first (deleting one removes its veth ends and their qdiscs), then the
  // control groups, which must be empty of processes to go.
  for (auto it = created_netns_.rbegin(); it != created_netns_.rend(); ++it) {
    auto p = remove_netns(*it);
    if (!p.empty()) problems.push_back(std::move(p));
  }
  for (auto it = created_cgroups_.rbegin(); it != created_cgroups_.rend(); ++it) {
    auto p = remove_cgroup(*it);
    if (!p.empty()) problems.push_back(std::move(p));
  }
  created_netns_.clear();
  created_cgroups_.clear();
  if (state_) {
    if (problems.empty()) state_->remove();
    else problems.push_back("left for `treefarm emulate --cleanup`: " + state_->path());
    state_.reset();
  }
  return problems;
}

void Platform::leak_for_test() {
  if (state_) state_->orphan();
  state_.reset();
  created_netns_.clear();
  created_cgroups_.clear();
}

// ---- hooks for the launcher ------------------------------------------------------------

std::vector<std::string> Platform::wrap(std::size_t i, const std::string& bin_dir) const {
  const auto& n = nodes_.at(i);
  std::vector<std::string> prefix;
  if (!n.cgroups.empty()) {
    std::string script;
    for (const auto& dir : n.cgroups) script += "echo $$ > " + shell_quote(dir + "/cgroup.procs") + " || exit 126; ";
    script += "exec \"$@\"";
    prefix = {"/bin/sh", "-c", script, "treefarm-emulate-join"};
  }
  for (const char* a : {"ip", "netns", "exec"}) prefix.push_back(a);
  prefix.push_back(n.netns);
  if (!bin_dir.empty()) {
    // The launcher names programs by their path next to itself; run them from bin_dir.
    for (const char* a : {"/bin/sh", "-c"}) prefix.push_back(a);
    prefix.push_back("p=$1; shift; exec " + shell_quote(bin_dir) + "/\"${p##*/}\" \"$@\"");
    prefix.push_back("treefarm-emulate-bin");
  }
  return prefix;
}

std::string Platform::listen_endpoint(std::size_t i) const {
  (void)nodes_.at(i);
  return "tcp://0.0.0.0:" + std::to_string(options_.port);
}

std::string Platform::parent_endpoint(std::size_t i, const std::string& parent_bound) const {
  const auto& n = nodes_.at(i);
  if (!n.parent) throw std::invalid_argument("parent_endpoint: node 0 is the master and has no parent");
  return "tcp://" + n.parent_address + ":" + port_of(parent_bound);
}

}  // namespace treefarm::emulate
