#pragma once
// Helpers for tests that start real treefarm processes.

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "tests/support/Shell.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::testing {

namespace fs = std::filesystem;

inline const std::string bin_dir = TREEFARM_BIN_DIR;
inline const std::string treefarm_bin = bin_dir + "/treefarm";
inline const std::string master_bin = bin_dir + "/treefarm-master";
inline const std::string worker_bin = bin_dir + "/treefarm-worker";

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

/// Runs a shell command to completion.
inline CommandResult run_command(const std::string& cmd) {
  auto r = test_support::run_shell(cmd + " 2>&1");
  return {r.exit_code, std::move(r.output)};
}

using test_support::TempDir;

inline std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

inline std::string read_file(const fs::path& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// Processes whose command line mentions `needle` (other than ourselves).
inline std::vector<pid_t> processes_mentioning(const std::string& needle) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (auto& c : cmdline)
      if (c == '\0') c = ' ';
    const pid_t pid = std::stoi(name);
    if (pid != getpid() && cmdline.find(needle) != std::string::npos) found.push_back(pid);
  }
  return found;
}

/// A process started by a test, its output in a file; killed (SIGKILL) if still running
/// when the object goes.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const fs::path& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    if (!exit_code_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  /// Waits up to `seconds`; the exit code, or nullopt if still running.
  std::optional<int> wait(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!exit_code_) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exit_code_;
  }
  pid_t pid() const { return pid_; }
  std::string output() const { return read_file(log_); }

 private:
  pid_t pid_ = -1;
  fs::path log_;
  std::optional<int> exit_code_;
};

/// Waits until `file` exists (a ready file) and returns its first line.
inline std::string wait_for_line(const fs::path& file, double seconds = 90) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!fs::exists(file) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ifstream f(file);
  std::string line;
  std::getline(f, line);
  return line;
}

/// Waits until `predicate()` holds, up to `seconds`.
template <class P>
bool wait_until(P predicate, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

/// The latest done count of the master's "[k s] done/total ..." progress lines in `output`.
inline std::uint64_t progress_done(const std::string& output) {
  std::uint64_t done = 0;
  std::size_t pos = 0;
  while ((pos = output.find("s] ", pos)) != std::string::npos) {
    pos += 3;
    done = std::strtoull(output.c_str() + pos, nullptr, 10);
  }
  return done;
}

}  // namespace treefarm::testing
