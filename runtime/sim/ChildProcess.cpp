#include "runtime/sim/ChildProcess.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace treefarm::sim {

void die_with_parent() { ::prctl(PR_SET_PDEATHSIG, SIGKILL); }

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
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(what + ": fork: " + std::strerror(err));
  }
  if (pid == 0) {
    die_with_parent();
    ::close(fds[0]);
    for (int fd : close_in_child) ::close(fd);
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
    std::fflush(nullptr);
    ::_exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

std::string read_to_end(int fd) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace treefarm::sim
