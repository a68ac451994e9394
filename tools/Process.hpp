#pragma once
/// @file Process.hpp
/// Child processes that never outlive the tool: each is started with a parent-death
/// signal, and ProcessSet ends all of them (SIGTERM, then SIGKILL) on destruction.

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace treefarm::tools {

struct Process {
  std::string name;
  pid_t pid = -1;
  std::optional<int> exit_code;       ///< Set once reaped (128+signal if killed).
  std::string log;                    ///< File its output goes to ("" = inherited).
};

class ProcessSet {
 public:
  ProcessSet() = default;
  ~ProcessSet();  ///< Ends every process still running.
  ProcessSet(const ProcessSet&) = delete;
  ProcessSet& operator=(const ProcessSet&) = delete;

  /// Starts argv[0] with argv; output to `log` (appended) or inherited if empty.
  /// Returns the index of the process.
  std::size_t spawn(const std::string& name, const std::vector<std::string>& argv, const std::string& log = "");
  /// Reaps whatever exited (non-blocking). Returns the indices that exited now.
  std::vector<std::size_t> reap();
  /// Waits up to `seconds` for process i to exit; true if it did.
  bool wait(std::size_t i, double seconds);
  /// SIGTERM to all running, wait up to `grace` seconds, then SIGKILL and reap.
  void end_all(double grace = 3.0);
  /// Sends a signal to process i if it runs.
  void signal(std::size_t i, int sig);

  const Process& at(std::size_t i) const { return procs_.at(i); }
  std::size_t size() const { return procs_.size(); }
  bool running(std::size_t i) const { return !procs_.at(i).exit_code.has_value(); }

 private:
  std::vector<Process> procs_;
};

/// Directory of the running executable (where treefarm-master and treefarm-worker are).
std::string self_dir();

/// The last `lines` lines of a file (for error reports).
std::string tail_file(const std::string& path, std::size_t lines = 15);

}  // namespace treefarm::tools
