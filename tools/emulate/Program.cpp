#include "tools/emulate/Program.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "runtime/process/Spawn.hpp"

namespace treefarm::emulate {

namespace {
std::string describe(const std::vector<std::string>& argv, const ProgramResult& r) {
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

ProgramError::ProgramError(const std::vector<std::string>& argv, const ProgramResult& result)
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

ProgramResult run_program(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("run_program: empty command");
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    close_pair(out);
    close_pair(err);
    throw std::runtime_error("pipe failed: " + std::string(std::strerror(errno)));
  }
  process::ChildSetup setup;
  setup.stdin_null = true;
  setup.stdout_fd = out[1];
  setup.stderr_fd = err[1];
  setup.own_process_group = true;
  pid_t pid = -1;
  try {
    pid = process::spawn(argv, setup);
  } catch (...) {
    close_pair(out);
    close_pair(err);
    throw;
  }
  close(out[1]);
  close(err[1]);

  ProgramResult r;
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
  r.exit_code = process::exit_code(process::wait(pid));
  return r;
}

std::string run_checked(const std::vector<std::string>& argv) {
  auto r = run_program(argv);
  if (r.exit_code != 0) throw ProgramError(argv, r);
  return r.out;
}

}  // namespace treefarm::emulate
