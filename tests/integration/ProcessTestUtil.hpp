#pragma once
// Helpers for tests that start real treefarm processes.

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <functional>
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

/// The chain m → w1 → w2 (one core each, buffer 4) with `tasks` matmul tasks of size `n`,
/// started as real processes in `dir`; the master waits for a fourth node (the one a test
/// adds: --parent auto, re-parenting). `extra(name)` gives each process more arguments
/// (e.g. its CURVE keys).
struct ChainTree {
  std::unique_ptr<Child> master, w1, w2;
  std::string w2_endpoint;

  /// Empty once every node is up and w2 has joined w1; else what went wrong (with logs).
  std::string start(const fs::path& dir, std::uint64_t tasks, int n,
                    const std::function<std::vector<std::string>(const std::string&)>& extra = {}) {
    const auto exp = write_file(dir / "chain.toml",
                                "[[node]]\nname = \"m\"\ncores = 0\n"
                                "[[node]]\nname = \"w1\"\nparent = \"m\"\ncores = 1\n"
                                "[[node]]\nname = \"w2\"\nparent = \"w1\"\ncores = 1\n"
                                "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = " + std::to_string(n) +
                                "\ntasks = " + std::to_string(tasks) + "\n[run]\nbuffer = 4\n");
    const auto with = [&](std::vector<std::string> argv, const std::string& name) {
      if (extra)
        for (auto& a : extra(name)) argv.push_back(a);
      return argv;
    };
    master = std::make_unique<Child>(with({master_bin, exp, "--ready-file", (dir / "m.ep").string(), "--out",
                                           (dir / "out").string(), "--wait-workers", "3", "--wait-timeout", "60"},
                                          "m"),
                                     dir / "master.log");
    const auto m_ep = wait_for_line(dir / "m.ep");
    if (m_ep.empty()) return "master not ready: " + master->output();
    w1 = std::make_unique<Child>(
        with({worker_bin, "--parent", m_ep, "--name", "w1", "--cores", "1", "--ready-file", (dir / "w1.ep").string()}, "w1"),
        dir / "w1.log");
    const auto w1_ep = wait_for_line(dir / "w1.ep");
    if (w1_ep.empty()) return "w1 not ready: " + w1->output();
    w2 = std::make_unique<Child>(
        with({worker_bin, "--parent", w1_ep, "--name", "w2", "--cores", "1", "--ready-file", (dir / "w2.ep").string()}, "w2"),
        dir / "w2.log");
    w2_endpoint = wait_for_line(dir / "w2.ep");
    if (w2_endpoint.empty()) return "w2 not ready: " + w2->output();
    // w2 has joined w1 and advertised its endpoint once w1 logs it as a child.
    if (!wait_until([&] { return w1->output().find("child 'w2' joined") != std::string::npos; }, 30))
      return "w2 did not join w1: " + w1->output();
    return {};
  }
  /// The log of node `name` of the chain.
  std::string output_of(const std::string& name) const {
    return name == "m" ? master->output() : name == "w1" ? w1->output() : w2->output();
  }
};

}  // namespace treefarm::testing
