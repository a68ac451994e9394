#include "lab/campaign/ProcessPool.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <vector>

#include "runtime/process/Spawn.hpp"
#include "runtime/sim/ChildProcess.hpp"

namespace treefarm::lab::campaign {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string("process pool: ") + what + ": " + std::strerror(errno));
}

}  // namespace

ProcessPool::ProcessPool(std::uint32_t parallel, double kill_after, std::ostream* flush)
    : parallel_(parallel), kill_after_(kill_after), flush_(flush) {
  if (parallel_ < 1) throw std::invalid_argument("process pool: parallel must be >= 1");
}

void ProcessPool::run(std::size_t count, const std::function<Work(std::size_t)>& prepare,
                      const std::function<void(std::size_t, const ProcessOutcome&)>& finished,
                      const std::atomic<bool>* stop) const {
  struct Active {
    std::size_t index;
    pid_t pid;
    int fd;
    std::string text;
    Clock::time_point started;
    bool killed = false;
    bool stopped = false;
  };
  std::vector<Active> active;
  std::size_t next = 0;
  std::optional<Clock::time_point> stopping;  // when `stop` was seen
  while ((next < count && !stopping) || !active.empty()) {
    if (!stopping && stop && stop->load()) {
      stopping = Clock::now();
      for (auto& a : active) {
        ::kill(a.pid, SIGTERM);  // our own children
        a.stopped = true;
      }
    }
    if (stopping && seconds_since(*stopping) > 2)
      for (auto& a : active)
        if (!a.killed) {
          ::kill(a.pid, SIGKILL);
          a.killed = true;
        }
    while (!stopping && next < count && active.size() < parallel_) {
      const Work work = prepare(next);
      int fds[2];
      if (::pipe(fds) != 0) fail("pipe");
      if (flush_) flush_->flush();
      process::ChildSetup setup;
      setup.default_signals = true;         // a handler of ours would keep it alive
      setup.parent_death_signal = SIGKILL;  // no simulation outlives the command
      setup.close_fds = {fds[0]};
      for (const auto& a : active) setup.close_fds.push_back(a.fd);
      pid_t pid = -1;
      try {
        pid = process::spawn_function(
            [&] {
              try {
                sim::write_all(fds[1], work());
              } catch (...) {
                // Nothing sent: the parent reports a child that exited without a result.
              }
              ::close(fds[1]);
              return 0;
            },
            setup, "process pool");
      } catch (...) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw;
      }
      ::close(fds[1]);
      active.push_back({next, pid, fds[0], {}, Clock::now()});
      ++next;
    }

    std::vector<pollfd> pfds;
    for (const auto& a : active) pfds.push_back({a.fd, POLLIN, 0});
    const int n = ::poll(pfds.data(), pfds.size(), stopping ? 100 : 1000);
    if (n < 0 && errno != EINTR) fail("poll");
    for (std::size_t i = active.size(); i-- > 0;) {
      auto& a = active[i];
      bool eof = false;
      if (n > 0 && (pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[1 << 14];
        const ssize_t got = ::read(a.fd, buf, sizeof buf);
        if (got > 0)
          a.text.append(buf, static_cast<std::size_t>(got));
        else if (got == 0 || errno != EINTR)
          eof = true;
      }
      if (!eof && kill_after_ > 0 && !a.killed && seconds_since(a.started) > kill_after_) {
        ::kill(a.pid, SIGKILL);  // our own child, past its time
        a.killed = true;
      }
      if (eof) {
        ::close(a.fd);
        const int status = process::wait(a.pid);
        const ProcessOutcome outcome{std::move(a.text), status, a.killed, seconds_since(a.started),
                                     a.stopped && WIFSIGNALED(status)};
        const std::size_t index = a.index;
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
        finished(index, outcome);
      }
    }
  }
}

}  // namespace treefarm::lab::campaign
