#include "runtime/sim/ChildProcess.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <malloc.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "runtime/process/Spawn.hpp"

namespace treefarm::sim {

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

ReportingChild fork_reporting_child(const std::function<std::string()>& work, const std::string& what,
                                    const std::vector<int>& close_in_child) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(what + ": pipe: " + std::strerror(errno));
  process::ChildSetup setup;
  setup.parent_death_signal = SIGKILL;  // no simulation outlives the command that started it
  setup.close_fds = close_in_child;
  setup.close_fds.push_back(fds[0]);
  pid_t pid = -1;
  try {
    pid = process::spawn_function(
        [&] {
          // The child starts with every page the parent had resident, the heap it freed
          // (parsing, the LP's solver) among them: it counts in the child's peak memory.
          // Give it back first (100,000 nodes: ~1 GB of the parent at the fork).
          ::malloc_trim(0);
          std::string report;
          try {
            report = work();
          } catch (const std::exception& e) {
            report = nlohmann::json{{"exception", e.what()}}.dump();
          } catch (...) {
            report = nlohmann::json{{"exception", "unknown exception"}}.dump();
          }
          write_all(fds[1], report);
          ::close(fds[1]);
          return 0;
        },
        setup, what);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

}  // namespace treefarm::sim
