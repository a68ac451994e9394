#include "tools/deploy/ChildProcess.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace treefarm::deploy {

namespace {
int decode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }
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
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execvp(cargv[0], cargv.data());
    const std::string msg = std::string("cannot start ") + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    _exit(127);
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
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_code_ = decode(status);
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
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_code_ = decode(status);
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
