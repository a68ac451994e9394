#include "runtime/process/Interrupt.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <unistd.h>

#include "runtime/process/Spawn.hpp"

namespace treefarm::process {

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

std::atomic<int>& stop_signal() {
  static std::atomic<int> sig{SIGINT};
  return sig;
}

void on_stop_signal(int sig) {
  stop_signal() = sig;  // lock-free atomics: safe in a handler
  stop_requested() = true;
}

void throw_if_stopped(const std::string& message) {
  if (stop_requested()) throw Interrupted(message);
}

namespace {
/// The line exit_at_once_on_stop() writes, made before any signal (a handler cannot build it).
char at_once_line[512];
std::size_t at_once_length = 0;

void exit_at_once(int) {
  [[maybe_unused]] const auto n = ::write(STDERR_FILENO, at_once_line, at_once_length);
  ::_exit(130);  // node::exit_interrupted (runtime/process links nothing of the node)
}
}  // namespace

void exit_at_once_on_stop(const std::string& program, const std::string& what) {
  const std::string line = program + ": error: interrupted; " + what + "\n";
  at_once_length = std::min(line.size(), sizeof at_once_line);
  std::memcpy(at_once_line, line.data(), at_once_length);
  struct sigaction sa {};
  sa.sa_handler = exit_at_once;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  if (stop_requested()) exit_at_once(0);  // one came before
}

std::string read_child_report(int fd, pid_t child, const std::string& message) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    if (stop_requested()) {
      ::kill(child, SIGKILL);
      wait(child);
      ::close(fd);
      throw Interrupted(message);
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);  // ms: how soon a stop request is seen
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace treefarm::process
