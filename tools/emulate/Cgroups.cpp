#include "tools/emulate/Cgroups.hpp"

#include "runtime/process/KernelFile.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace treefarm::emulate {

namespace fs = std::filesystem;
using process::read_kernel_file;

namespace {
bool has_word(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

std::string quota_us(double quota) {
  const long us = std::max(1000L, std::lround(quota * static_cast<double>(cpu_period_us)));
  return std::to_string(us);
}

void make_dir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create control group " + dir + ": " + std::strerror(errno));
}

/// v2: controllers must be enabled in the parent's subtree_control before a child can use them.
void enable_v2_controller(const std::string& root, const std::string& controller) {
  if (has_word(read_kernel_file(root + "/cgroup.subtree_control"), controller)) return;
  try {
    write_control(root + "/cgroup.subtree_control", "+" + controller);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + " (cgroup v2: the '" + controller +
                             "' controller cannot be enabled for child groups here; run without cpu_quota/cpuset "
                             "or on a machine that delegates it)");
  }
}
}  // namespace

void write_control(const std::string& path, const std::string& value) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = write(fd, value.data(), value.size());
  const int saved = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    throw std::runtime_error("cannot write '" + value + "' to " + path + ": " + std::strerror(saved));
}

CgroupMounts CgroupMounts::detect(const std::string& base) {
  CgroupMounts m;
  if (fs::exists(base + "/cpu/cpu.cfs_quota_us")) {
    m.version = CgroupVersion::v1;
    m.cpu = base + "/cpu";
    if (fs::exists(base + "/cpuset/cpuset.cpus")) m.cpuset = base + "/cpuset";
    if (fs::exists(base + "/cpuacct/cpuacct.usage")) m.cpuacct = base + "/cpuacct";
    else if (fs::exists(base + "/cpu/cpuacct.usage")) m.cpuacct = base + "/cpu";  // cpu,cpuacct mounted together
    return m;
  }
  if (fs::exists(base + "/cgroup.controllers")) {
    const auto controllers = read_kernel_file(base + "/cgroup.controllers");
    m.version = CgroupVersion::v2;
    if (has_word(controllers, "cpu")) m.cpu = base;
    if (has_word(controllers, "cpuset")) m.cpuset = base;
    m.cpuacct = base;  // cpu.stat's usage_usec is in every v2 group, controller or not
  }
  return m;
}

std::vector<std::string> create_cgroups(const CgroupMounts& mounts, const std::string& name, const CpuLimits& limits,
                                        const std::function<void(const std::string&)>& record) {
  std::vector<std::string> dirs;
  const bool want_quota = limits.quota.has_value(), want_cpuset = !limits.cpuset.empty();
  if (!want_quota && !want_cpuset) return dirs;
  if (want_quota && mounts.cpu.empty())
    throw std::runtime_error("cpu_quota needs the cgroup 'cpu' controller, which is not mounted under /sys/fs/cgroup");
  if (want_cpuset && mounts.cpuset.empty())
    throw std::runtime_error("cpuset needs the cgroup 'cpuset' controller, which is not mounted under /sys/fs/cgroup");

  if (mounts.version == CgroupVersion::v1) {
    if (want_quota) {
      const std::string dir = mounts.cpu + "/" + name;
      record(dir);
      make_dir(dir);
      dirs.push_back(dir);
      write_control(dir + "/cpu.cfs_period_us", std::to_string(cpu_period_us));
      write_control(dir + "/cpu.cfs_quota_us", quota_us(*limits.quota));
    }
    if (want_cpuset) {
      const std::string dir = mounts.cpuset + "/" + name;
      record(dir);
      make_dir(dir);
      dirs.push_back(dir);
      try {
        write_control(dir + "/cpuset.cpus", limits.cpuset);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string(e.what()) + " (this machine's CPUs: " +
                                 read_kernel_file(mounts.cpuset + "/cpuset.cpus") + ")");
      }
      write_control(dir + "/cpuset.mems", read_kernel_file(mounts.cpuset + "/cpuset.mems"));
    }
    return dirs;
  }

  // v2: one group carries both limits.
  const std::string root = want_quota ? mounts.cpu : mounts.cpuset;
  if (want_quota) enable_v2_controller(root, "cpu");
  if (want_cpuset) enable_v2_controller(root, "cpuset");
  const std::string dir = root + "/" + name;
  record(dir);
  make_dir(dir);
  dirs.push_back(dir);
  if (want_quota) write_control(dir + "/cpu.max", quota_us(*limits.quota) + " " + std::to_string(cpu_period_us));
  if (want_cpuset) {
    try {
      write_control(dir + "/cpuset.cpus", limits.cpuset);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + " (this machine's CPUs: " +
                               read_kernel_file(root + "/cpuset.cpus.effective") + ")");
    }
  }
  return dirs;
}

std::string create_accounting_cgroup(const CgroupMounts& mounts, const std::string& name,
                                     const std::vector<std::string>& limit_dirs,
                                     const std::function<void(const std::string&)>& record) {
  if (mounts.cpuacct.empty()) return "";
  if (mounts.version == CgroupVersion::v2 && !limit_dirs.empty()) return limit_dirs.front();
  const std::string dir = mounts.cpuacct + "/" + name;
  // v1 with cpu and cpuacct mounted together: the quota's group counts already.
  for (const auto& d : limit_dirs)
    if (d == dir) return d;
  record(dir);
  make_dir(dir);
  return dir;
}

std::optional<double> cgroup_cpu_seconds(const std::string& dir) {
  if (fs::exists(dir + "/cpuacct.usage")) {
    const auto text = read_kernel_file(dir + "/cpuacct.usage");
    try {
      return static_cast<double>(std::stoull(text)) * 1e-9;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  std::ifstream stat(dir + "/cpu.stat");
  std::string key;
  unsigned long long value = 0;
  while (stat >> key >> value)
    if (key == "usage_usec") return static_cast<double>(value) * 1e-6;
  return std::nullopt;
}

bool set_cpu_quota(const std::string& dir, double quota) {
  if (fs::exists(dir + "/cpu.cfs_quota_us")) {
    write_control(dir + "/cpu.cfs_quota_us", quota_us(quota));
    return true;
  }
  if (fs::exists(dir + "/cpu.max")) {
    write_control(dir + "/cpu.max", quota_us(quota) + " " + std::to_string(cpu_period_us));
    return true;
  }
  return false;
}

std::string remove_cgroup(const std::string& dir) {
  if (!fs::exists(dir)) return "";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (;;) {
    std::ifstream procs(dir + "/cgroup.procs");
    pid_t pid;
    while (procs >> pid) ::kill(pid, SIGKILL);
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return "";
    if (errno != EBUSY || std::chrono::steady_clock::now() > deadline)
      return "cannot remove control group " + dir + ": " + std::strerror(errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace treefarm::emulate
