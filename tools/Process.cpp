#include "tools/Process.hpp"

#include <chrono>
#include <csignal>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace treefarm::tools {

ProcessSet::~ProcessSet() { end_all(); }

std::size_t ProcessSet::spawn(const std::string& name, const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed for " + name);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (!log.empty()) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
    }
    execvp(args[0], args.data());
    _exit(127);
  }
  procs_.push_back(Process{name, pid, std::nullopt, log});
  return procs_.size() - 1;
}

std::vector<std::size_t> ProcessSet::reap() {
  std::vector<std::size_t> exited;
  for (std::size_t i = 0; i < procs_.size(); ++i) {
    auto& p = procs_[i];
    if (p.exit_code) continue;
    int status = 0;
    const pid_t r = waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid) {
      p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
    int status = 0;
    waitpid(procs_[i].pid, &status, 0);
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
