#include "runtime/process/Spawn.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace treefarm::process {

namespace {

/// Applies `setup` in the freshly forked child (before its work or exec). Only calls
/// that are safe between fork and exec in a multi-threaded parent.
void prepare_child(const ChildSetup& setup, pid_t parent) {
  if (setup.parent_death_signal) {
    ::prctl(PR_SET_PDEATHSIG, *setup.parent_death_signal);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the signal was armed
  }
  if (setup.own_process_group) ::setpgid(0, 0);
  if (setup.default_signals) {
    for (int sig : {SIGINT, SIGTERM, SIGPIPE}) ::signal(sig, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
  }
  int in = setup.stdin_fd;
  if (setup.stdin_null) in = ::open("/dev/null", O_RDONLY);
  if (in >= 0) ::dup2(in, STDIN_FILENO);
  if (setup.stdout_fd >= 0) ::dup2(setup.stdout_fd, STDOUT_FILENO);
  if (setup.stderr_fd >= 0) ::dup2(setup.stderr_fd, STDERR_FILENO);
  for (int fd : setup.close_fds)
    if (fd > STDERR_FILENO) ::close(fd);
}

/// The project's only fork: runs `child` in the new process (which must not return).
pid_t fork_child(const ChildSetup& setup, const std::string& what, const std::function<void()>& child) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);  // what is buffered now would be written twice, once by each process
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(what + ": fork: " + std::strerror(errno));
  if (pid == 0) {
    prepare_child(setup, parent);
    child();
    ::_exit(127);
  }
  return pid;
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const ChildSetup& setup) {
  if (argv.empty() || argv[0].empty()) throw std::invalid_argument("spawn: empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Built before the fork: the child only writes it (no allocation after fork).
  const std::string cannot = "cannot start " + argv[0] + ": ";
  return fork_child(setup, argv[0], [&] {
    ::execvp(args[0], args.data());
    const char* reason = std::strerror(errno);
    (void)!::write(STDERR_FILENO, cannot.data(), cannot.size());
    (void)!::write(STDERR_FILENO, reason, std::strlen(reason));
    (void)!::write(STDERR_FILENO, "\n", 1);
  });
}

pid_t spawn_function(const std::function<int()>& body, const ChildSetup& setup, const std::string& what) {
  return fork_child(setup, what, [&] {
    int rc = 1;
    try {
      rc = body();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(rc);
  });
}

int wait(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

std::optional<int> try_wait(pid_t pid) {
  int status = 0;
  pid_t r = 0;
  while ((r = ::waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == pid) return status;
  return std::nullopt;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace treefarm::process
