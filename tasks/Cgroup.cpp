#include "tasks/Cgroup.hpp"

#include "runtime/process/KernelFile.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace treefarm::tasks {

namespace fs = std::filesystem;
using process::read_kernel_file;

namespace {

/// Writes `text` to a cgroup file; throws naming the file and the kernel's reason.
void write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write '" + text + "' to " + path + ": " + std::strerror(e));
}

bool try_write(const std::string& path, const std::string& text) {
  try {
    write_text(path, text);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

std::vector<pid_t> procs_of(const std::string& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(read_kernel_file(dir + "/cgroup.procs"));
  for (long p = 0; in >> p;) pids.push_back(static_cast<pid_t>(p));
  return pids;
}

/// SIGKILL to every process the group lists, again until it lists none (v1, or v2 without
/// cgroup.kill). A process forking meanwhile is listed in the next round; the pids limit
/// bounds how many there can be. False if some remain after 10 s.
bool kill_listed(const std::string& dir, bool v2_kill) {
  if (v2_kill) try_write(dir + "/cgroup.kill", "1");  // the whole group at once, forks included
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto pids = procs_of(dir);
    if (pids.empty()) return true;
    if (std::chrono::steady_clock::now() > give_up) return false;
    for (pid_t p : pids) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// rmdir, retried while the kernel still counts exiting processes in the group.
void remove_dir(const std::string& dir) {
  for (int i = 0; i < 2000; ++i) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::warn("command task: cannot remove cgroup {}: {}", dir, std::strerror(errno));
}

/// Kills what a group holds and removes it with its task-* subgroups.
void clear_tree(const std::string& root, bool v2_kill) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory(ec) || e.path().filename().string().rfind("task-", 0) != 0) continue;
    kill_listed(e.path().string(), v2_kill);
    remove_dir(e.path().string());
  }
}

struct Mount {
  std::string root, point, fstype, options;
};

std::vector<Mount> cgroup_mounts() {
  std::vector<Mount> out;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts, field;
    f >> id >> parent >> dev >> root >> point >> opts;
    while (f >> field && field != "-") {
    }
    Mount m{root, point, "", ""};
    std::string source;
    f >> m.fstype >> source >> m.options;
    if (m.fstype == "cgroup" || m.fstype == "cgroup2") out.push_back(std::move(m));
  }
  return out;
}

bool has_token(const std::string& list, const std::string& token) {
  std::istringstream in(list);
  for (std::string t; std::getline(in, t, ',');)
    if (t == token) return true;
  return false;
}

/// The folder of this process's own group: the mount point joined with its path in
/// /proc/self/cgroup, less the mount's root (inside a container both may start alike).
std::string own_folder(const Mount& m, const std::string& path) {
  std::string rel = path;
  if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
  return m.point + (rel == "/" ? "" : rel);
}

/// "treefarm-NS-": NS the pid namespace's inode, so that a worker judges only the folders
/// of workers whose process ids it can see.
std::string folder_prefix() {
  std::error_code ec;
  std::string ns = fs::read_symlink("/proc/self/ns/pid", ec).string();  // "pid:[4026531836]"
  std::string digits;
  for (char c : ns)
    if (c >= '0' && c <= '9') digits += c;
  return "treefarm-" + (digits.empty() ? std::string("0") : digits) + "-";
}

std::mutex host_mutex;
struct HostSlot {
  std::unique_ptr<CgroupHost> host;
  std::string why;
  bool detected = false;
  bool warned = false;
};
std::array<HostSlot, 3> hosts;  // by CgroupChoice: automatic, v1, v2
std::atomic<std::uint64_t> task_counter{0};

}  // namespace

std::unique_ptr<CgroupHost> CgroupHost::detect(CgroupChoice choice, std::string& why) {
  std::map<std::string, std::string> paths;  // controller ("" for v2) -> path in /proc/self/cgroup
  {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
      if (ctrls.empty()) paths[""] = path;
      std::istringstream c(ctrls);
      for (std::string t; std::getline(c, t, ',');) paths[t] = path;
    }
  }
  const auto mounts = cgroup_mounts();
  auto host = std::make_unique<CgroupHost>();
  const std::string self = folder_prefix() + std::to_string(::getpid());
  for (const char* ctrl : {"pids", "memory", "cpuset"}) {
    if (choice == CgroupChoice::v2) break;
    for (const auto& m : mounts) {
      if (m.fstype != "cgroup" || !has_token(m.options, ctrl) || !paths.count(ctrl)) continue;
      const std::string parent = own_folder(m, paths[ctrl]);
      host->hierarchies_.push_back({ctrl, parent, parent + "/" + self});
      break;
    }
  }
  if (!host->hierarchies_.empty() && host->hierarchies_.front().controller != "pids") {
    host->hierarchies_.clear();  // v1 without the pids hierarchy: no complete list of a task's processes
  }
  if (host->hierarchies_.empty() && choice != CgroupChoice::v1) {
    for (const auto& m : mounts) {
      if (m.fstype != "cgroup2" || !paths.count("")) continue;
      const std::string parent = own_folder(m, paths[""]);
      if (!fs::exists(parent + "/cgroup.controllers")) continue;
      host->version_ = Version::v2;
      host->hierarchies_.push_back({"", parent, parent + "/" + self});
      break;
    }
  }
  if (host->hierarchies_.empty()) {
    why = choice == CgroupChoice::v1   ? "no cgroup v1 hierarchy with the pids controller is mounted"
          : choice == CgroupChoice::v2 ? "no cgroup v2 unified hierarchy is mounted"
                                       : "no cgroup hierarchy with the pids controller (v1) or unified hierarchy (v2) is mounted";
    return nullptr;
  }
  for (const auto& h : host->hierarchies_) {
    if (::mkdir(h.root.c_str(), 0755) == 0) continue;
    if (errno == EEXIST) {  // left by a worker that had this process's pid and is gone
      clear_tree(h.root, host->version_ == Version::v2);
      continue;
    }
    why = "cannot create " + h.root + ": " + std::strerror(errno);
    for (const auto& made : host->hierarchies_) ::rmdir(made.root.c_str());
    return nullptr;
  }
  try {
    if (host->version_ == Version::v1) {
      for (const auto& h : host->hierarchies_) {
        if (h.controller != "cpuset") continue;  // a new cpuset starts empty: give it its parent's
        write_text(h.root + "/cpuset.cpus", read_kernel_file(h.parent + "/cpuset.cpus"));
        write_text(h.root + "/cpuset.mems", read_kernel_file(h.parent + "/cpuset.mems"));
      }
      for (const auto& h : host->hierarchies_) host->controllers_ += (host->controllers_.empty() ? "" : " ") + h.controller;
    } else {
      // A controller is given to the children only by a parent that holds no process itself
      // (the "no internal processes" rule): true at the root, not always below it.
      const auto& h = host->hierarchies_.front();
      const std::string available = read_kernel_file(h.parent + "/cgroup.controllers");
      for (const char* ctrl : {"pids", "memory", "cpuset"}) {
        std::istringstream in(available);
        bool found = false;
        for (std::string t; in >> t;) found = found || t == ctrl;
        if (found && try_write(h.parent + "/cgroup.subtree_control", std::string("+") + ctrl) &&
            try_write(h.root + "/cgroup.subtree_control", std::string("+") + ctrl))
          host->controllers_ += (host->controllers_.empty() ? "" : " ") + std::string(ctrl);
      }
      host->v2_kill_ = fs::exists(h.root + "/cgroup.kill");
    }
  } catch (const std::runtime_error& e) {
    why = e.what();
    for (const auto& made : host->hierarchies_) ::rmdir(made.root.c_str());
    return nullptr;
  }
  for (const auto& h : host->hierarchies_) host->roots_.push_back(h.root);
  return host;
}

CgroupHost::~CgroupHost() {
  for (const auto& root : roots_) ::rmdir(root.c_str());  // empty by now: every task's group is gone
}

int CgroupHost::remove_stale() const {
  int removed = 0;
  std::error_code ec;
  const std::string prefix = folder_prefix();
  for (const auto& h : hierarchies_) {
    for (const auto& e : fs::directory_iterator(h.parent, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) != 0 || e.path().string() == h.root) continue;
      const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
      if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
      clear_tree(e.path().string(), v2_kill_);
      kill_listed(e.path().string(), v2_kill_);
      remove_dir(e.path().string());
      ++removed;
    }
  }
  if (removed > 0) spdlog::info("command tasks: removed {} cgroup folders left by workers that are gone", removed);
  return removed;
}

std::vector<std::string> CgroupHost::parents() const {
  std::vector<std::string> out;
  for (const auto& h : hierarchies_) out.push_back(h.parent);
  return out;
}

namespace {

/// The host of one version, found once (under host_mutex).
CgroupHost* found(CgroupChoice version, const std::function<std::unique_ptr<CgroupHost>(std::string&)>& detect) {
  auto& slot = hosts[static_cast<std::size_t>(version)];
  if (!slot.detected) {
    slot.detected = true;
    slot.host = detect(slot.why);
    if (slot.host) {
      slot.host->remove_stale();
      spdlog::info("command tasks: one cgroup ({}) per task under {} (controllers: {})",
                   slot.host->version() == CgroupHost::Version::v1 ? "v1" : "v2", slot.host->roots().front(),
                   slot.host->controllers().empty() ? "none" : slot.host->controllers());
    }
  }
  return slot.host.get();
}

}  // namespace

CgroupHost* CgroupHost::get(CgroupChoice choice) {
  if (choice == CgroupChoice::none) throw std::invalid_argument("CgroupHost::get: no host for CgroupChoice::none");
  std::lock_guard lock(host_mutex);
  const auto detect_for = [](CgroupChoice c) {
    return [c](std::string& why) { return CgroupHost::detect(c, why); };
  };
  CgroupHost* host = nullptr;
  if (choice == CgroupChoice::automatic) {
    host = found(CgroupChoice::v1, detect_for(CgroupChoice::v1));
    if (!host) host = found(CgroupChoice::v2, detect_for(CgroupChoice::v2));
  } else {
    host = found(choice, detect_for(choice));
  }
  auto& slot = hosts[static_cast<std::size_t>(choice)];
  if (!host && !slot.warned) {
    slot.warned = true;
    if (choice == CgroupChoice::automatic)
      slot.why = hosts[1].why + "; " + hosts[2].why;
    spdlog::warn("command tasks: cgroups unavailable ({}): a task's processes are limited by rlimits only and "
                 "killed by process group when it ends, so a process that leaves the group (setsid) can outlive "
                 "its task (docs/command-tasks.md, \"Without cgroups\")",
                 slot.why);
  }
  return host;
}

std::string CgroupHost::unavailable_reason(CgroupChoice choice) {
  const bool available = get(choice) != nullptr;
  std::lock_guard lock(host_mutex);
  return available ? std::string() : hosts[static_cast<std::size_t>(choice)].why;
}

TaskCgroup::TaskCgroup(CgroupHost& host, const CgroupLimits& limits) : host_(host) {
  const std::string name = "/task-" + std::to_string(task_counter.fetch_add(1));
  std::string cpus;
  for (int c : limits.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  try {
    for (const auto& h : host.hierarchies_) {
      const std::string dir = h.root + name;
      if (::mkdir(dir.c_str(), 0755) != 0) throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
      paths_.push_back(dir);
      const bool v2 = host.version_ == CgroupHost::Version::v2;
      const auto has = [&](const char* c) { return v2 ? host.controllers_.find(c) != std::string::npos : h.controller == c; };
      if (has("pids") && limits.pids > 0) write_text(dir + "/pids.max", std::to_string(limits.pids));
      if (has("memory")) {
        memory_path_ = dir;
        if (limits.memory_bytes > 0) {
          write_text(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), std::to_string(limits.memory_bytes));
          // Swap does not extend it (where the kernel accounts swap).
          try_write(dir + (v2 ? "/memory.swap.max" : "/memory.memsw.limit_in_bytes"),
                    v2 ? std::string("0") : std::to_string(limits.memory_bytes));
        }
      }
      if (has("cpuset")) {
        write_text(dir + "/cpuset.cpus", cpus.empty() ? read_kernel_file(h.root + "/cpuset.cpus") : cpus);
        if (!v2) write_text(dir + "/cpuset.mems", read_kernel_file(h.root + "/cpuset.mems"));
      }
      const int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) throw std::runtime_error("cannot open " + dir + "/cgroup.procs: " + std::strerror(errno));
      join_fds_.push_back(fd);
    }
  } catch (...) {
    for (int fd : join_fds_) ::close(fd);
    for (const auto& p : paths_) ::rmdir(p.c_str());
    throw;
  }
}

TaskCgroup::~TaskCgroup() {
  if (!kill_all()) spdlog::warn("command task: processes still listed in {} after 10 s of SIGKILL", path());
  for (int fd : join_fds_) ::close(fd);
  for (const auto& p : paths_) remove_dir(p);
}

bool TaskCgroup::kill_all() {
  return kill_listed(paths_.front(), host_.version_ == CgroupHost::Version::v2 && host_.v2_kill_);
}

bool TaskCgroup::oom_killed() const {
  if (memory_path_.empty()) return false;
  const bool v2 = host_.version_ == CgroupHost::Version::v2;
  std::istringstream in(read_kernel_file(memory_path_ + (v2 ? "/memory.events" : "/memory.oom_control")));
  for (std::string key; in >> key;) {
    std::uint64_t value = 0;
    in >> value;
    if (key == "oom_kill") return value > 0;
  }
  return false;
}

}  // namespace treefarm::tasks
