#include "tools/emulate/Command.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace treefarm::emulate {

namespace {
std::string describe(const std::vector<std::string>& argv, const CommandResult& r) {
  std::string what = command_line(argv) + ": exited with code " + std::to_string(r.exit_code);
  std::string err = r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  if (!err.empty()) what += ": " + err;
  return what;
}

void close_pair(int fds[2]) {
  for (int i = 0; i < 2; ++i)
    if (fds[i] >= 0) close(fds[i]);
}
}  // namespace

CommandError::CommandError(const std::vector<std::string>& argv, const CommandResult& result)
    : std::runtime_error(describe(argv, result)), result_(result) {}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t'\"$;&|<>*?\\") == std::string::npos;
    line += plain ? a : "'" + a + "'";
  }
  return line;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("run_command: empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    close_pair(out);
    close_pair(err);
    throw std::runtime_error("pipe failed: " + std::string(std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close_pair(out);
    close_pair(err);
    throw std::runtime_error("fork failed for " + argv[0] + ": " + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execvp(args[0], args.data());
    const std::string msg = "cannot execute " + argv[0] + ": " + std::strerror(errno) + "\n";
    [[maybe_unused]] auto n = write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);

  CommandResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string run_checked(const std::vector<std::string>& argv) {
  auto r = run_command(argv);
  if (r.exit_code != 0) throw CommandError(argv, r);
  return r.out;
}

}  // namespace treefarm::emulate
