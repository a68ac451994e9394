#include "tools/deploy/ChildProcess.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "runtime/process/Spawn.hpp"

namespace treefarm::deploy {

namespace {
int decode(int status) { return process::exit_code(status); }
}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: empty command");
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  process::ChildSetup setup;
  setup.stdin_fd = in[0];
  setup.stdout_fd = setup.stderr_fd = out[1];
  setup.parent_death_signal = SIGTERM;
  setup.own_process_group = true;
  setup.default_signals = true;
  try {
    pid_ = process::spawn(argv, setup);
  } catch (...) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw;
  }
  ::close(in[0]);
  ::close(out[1]);
  in_fd_ = in[1];
  out_fd_ = out[0];
  fcntl(out_fd_, F_SETFL, fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
}

ChildProcess::~ChildProcess() {
  if (!exit_code_) terminate();
  close_stdin();
  if (out_fd_ >= 0) ::close(out_fd_);
}

bool ChildProcess::write_stdin(const std::string& data) {
  std::size_t done = 0;
  while (in_fd_ >= 0 && done < data.size()) {
    const auto n = ::write(in_fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return in_fd_ >= 0;
}

void ChildProcess::close_stdin() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
}

std::string ChildProcess::read_output() {
  std::string got;
  char buf[8192];
  while (out_fd_ >= 0) {
    const auto n = ::read(out_fd_, buf, sizeof buf);
    if (n > 0) {
      got.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // EOF: every holder of the pipe's write end is gone
      ::close(out_fd_);
      out_fd_ = -1;
    }
    break;
  }
  return got;
}

std::optional<int> ChildProcess::poll_exit() {
  if (exit_code_) return exit_code_;
  if (const auto status = process::try_wait(pid_)) exit_code_ = decode(*status);
  return exit_code_;
}

std::optional<int> ChildProcess::wait(double seconds, std::string* output) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    const std::string got = read_output();
    if (output) *output += got;
    if (poll_exit()) {
      // Output written just before exiting is still in the pipe.
      const std::string rest = read_output();
      if (output) *output += rest;
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    if (out_fd_ >= 0) {
      pollfd p{out_fd_, POLLIN, 0};
      ::poll(&p, 1, 20);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

int ChildProcess::terminate(double grace) {
  if (poll_exit()) return *exit_code_;
  ::kill(pid_, SIGTERM);
  if (wait(grace)) return *exit_code_;
  ::kill(pid_, SIGKILL);
  exit_code_ = decode(process::wait(pid_));
  return *exit_code_;
}

std::pair<int, std::string> run_with_input(const std::vector<std::string>& argv, const std::string& input, double timeout) {
  ChildProcess child(argv);
  std::string out;
  // The input is small (scripts, keys): it fits the pipe, or the child reads it as it comes.
  child.write_stdin(input);
  child.close_stdin();
  if (const auto rc = child.wait(timeout, &out)) return {*rc, out};
  child.terminate(1.0);
  out += child.read_output();
  return {124, out};
}

}  // namespace treefarm::deploy
