#include "tools/Process.hpp"

#include <chrono>
#include <csignal>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "runtime/process/Spawn.hpp"

namespace treefarm::tools {

ProcessSet::~ProcessSet() { end_all(); }

std::size_t ProcessSet::spawn(const std::string& name, const std::vector<std::string>& argv, const std::string& log) {
  process::ChildSetup setup;
  setup.parent_death_signal = SIGKILL;
  int fd = -1;
  if (!log.empty()) {
    fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    setup.stdout_fd = setup.stderr_fd = fd;  // unopenable: output stays inherited
  }
  pid_t pid = -1;
  try {
    pid = process::spawn(argv, setup);
  } catch (const std::exception& e) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot start " + name + ": " + e.what());
  }
  if (fd >= 0) ::close(fd);
  procs_.push_back(Process{name, pid, std::nullopt, log});
  return procs_.size() - 1;
}

std::vector<std::size_t> ProcessSet::reap() {
  std::vector<std::size_t> exited;
  for (std::size_t i = 0; i < procs_.size(); ++i) {
    auto& p = procs_[i];
    if (p.exit_code) continue;
    if (const auto status = process::try_wait(p.pid)) {
      p.exit_code = process::exit_code(*status);
      exited.push_back(i);
    }
  }
  return exited;
}

bool ProcessSet::wait(std::size_t i, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (running(i)) {
    reap();
    if (!running(i)) break;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void ProcessSet::signal(std::size_t i, int sig) {
  if (running(i)) ::kill(procs_[i].pid, sig);
}

void ProcessSet::end_all(double grace) {
  reap();
  bool any = false;
  for (std::size_t i = 0; i < procs_.size(); ++i)
    if (running(i)) {
      ::kill(procs_[i].pid, SIGTERM);
      any = true;
    }
  if (!any) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
  for (;;) {
    reap();
    bool left = false;
    for (std::size_t i = 0; i < procs_.size(); ++i) left |= running(i);
    if (!left) return;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (std::size_t i = 0; i < procs_.size(); ++i)
    if (running(i)) ::kill(procs_[i].pid, SIGKILL);
  for (std::size_t i = 0; i < procs_.size(); ++i) {
    if (!running(i)) continue;
    (void)process::wait(procs_[i].pid);
    procs_[i].exit_code = 128 + SIGKILL;
  }
}

std::string self_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

std::string tail_file(const std::string& path, std::size_t lines) {
  std::ifstream f(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(f, line)) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "    " + l + "\n";
  return out;
}

}  // namespace treefarm::tools
