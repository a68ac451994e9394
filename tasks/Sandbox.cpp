#include "tasks/Sandbox.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>

#include "tasks/Cgroup.hpp"

namespace treefarm::tasks {

namespace fs = std::filesystem;

namespace {

constexpr const char* clean_path = "/usr/local/bin:/usr/bin:/bin";

std::string errno_text(int e) { return std::strerror(e); }

/// Where the child stopped before exec, sent to the parent through a close-on-exec pipe.
enum class Step : int { join_cgroup, stdio, affinity, limits, workdir, groups, gid, uid, no_new_privs, exec };

const char* step_text(Step s) {
  switch (s) {
    case Step::join_cgroup: return "cannot join its cgroup";
    case Step::stdio: return "cannot set up its standard input and output";
    case Step::affinity: return "cannot be pinned to its cores";
    case Step::limits: return "cannot set its resource limits";
    case Step::workdir: return "cannot enter its folder (can the run-as user reach the scratch folder?)";
    case Step::groups: return "cannot drop its supplementary groups";
    case Step::gid: return "cannot take the run-as user's group";
    case Step::uid: return "cannot take the run-as user's uid";
    case Step::no_new_privs: return "cannot set no_new_privs";
    case Step::exec: return "";
  }
  return "";
}

struct ChildFailure {
  Step step;
  int error;
};

/// Everything the child needs, prepared before the fork: after it, only async-signal-safe
/// calls (raw system calls) are made.
struct ChildPlan {
  const char* program = nullptr;
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* work = nullptr;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1, report_fd = -1;
  std::vector<int> join_fds;
  bool pin = false;
  cpu_set_t cpus{};
  std::vector<std::pair<int, rlimit>> limits;
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t parent = 0;
};

[[noreturn]] void child_fail(const ChildPlan& p, Step step) {
  const ChildFailure f{step, errno};
  [[maybe_unused]] const auto n = ::write(p.report_fd, &f, sizeof f);
  ::_exit(127);
}

[[noreturn]] void child_main(const ChildPlan& p) {
  ::setpgid(0, 0);  // its own group: the fallback kills the group
  for (int fd : p.join_fds)
    if (::write(fd, "0", 1) != 1) child_fail(p, Step::join_cgroup);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // SIGKILL/SIGSTOP: EINVAL, harmless
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(p.stdin_fd, 0) < 0 || ::dup2(p.stdout_fd, 1) < 0 || ::dup2(p.stderr_fd, 2) < 0) child_fail(p, Step::stdio);
  // Nothing else of the worker's (sockets, key files) reaches the program; the report pipe
  // closes at exec, which tells the parent it succeeded.
  if (::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0)
    for (int fd = 3; fd < 65536; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  if (p.pin && ::sched_setaffinity(0, sizeof p.cpus, &p.cpus) != 0) child_fail(p, Step::affinity);
  for (const auto& [resource, limit] : p.limits)
    if (::setrlimit(resource, &limit) != 0) child_fail(p, Step::limits);
  if (p.switch_user) {
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) child_fail(p, Step::groups);
    if (::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0) child_fail(p, Step::gid);
    if (::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) child_fail(p, Step::uid);
  }
  // After the change of user, which clears it: the program dies with the worker.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != p.parent) ::_exit(127);  // the worker died before the line above
  if (::chdir(p.work) != 0) child_fail(p, Step::workdir);  // as the run-as user: it must reach it
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail(p, Step::no_new_privs);  // no setuid binaries
  ::execve(p.program, p.argv.data(), p.envp.data());
  child_fail(p, Step::exec);
}

/// argv[0] on the clean PATH (an executable regular file), or itself if it has a '/'.
std::optional<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string dirs = clean_path;
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/" + name;
    struct stat st{};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

/// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

rlimit capped(int resource, rlim_t value) {
  rlimit now{};
  ::getrlimit(resource, &now);
  const rlim_t v = now.rlim_max == RLIM_INFINITY ? value : std::min(value, now.rlim_max);
  return rlimit{v, v};
}

std::string size_text(std::uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

Sandbox::Sandbox(SandboxSettings settings) : settings_(std::move(settings)) {
  std::string tmpl = settings_.scratch + "/treefarm-task-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error("command task: cannot create a folder in " + settings_.scratch + ": " + errno_text(errno));
  outer_ = tmpl;
  work_ = outer_ + "/work";
  // The outer folder stays this process's: the program cannot rename or replace its work
  // folder, which is all it may write.
  if (::chmod(outer_.c_str(), 0711) != 0 || ::mkdir(work_.c_str(), 0700) != 0 ||
      (work_fd_ = ::open(work_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
      (settings_.user.switch_user && ::fchown(work_fd_, settings_.user.uid, settings_.user.gid) != 0)) {
    const int e = errno;
    std::error_code ec;
    fs::remove_all(outer_, ec);
    throw std::runtime_error("command task: cannot prepare the folder " + work_ + ": " + errno_text(e));
  }
}

Sandbox::~Sandbox() {
  if (work_fd_ >= 0) ::close(work_fd_);
  std::error_code ec;
  fs::remove_all(outer_, ec);
  if (ec) spdlog::warn("command task: cannot remove its folder {}: {}", outer_, ec.message());
}

std::string Sandbox::write_file(const std::string& name, std::span<const std::byte> bytes) {
  Fd fd(::openat(work_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  const std::string path = work_ + "/" + name;
  if (fd.fd < 0) throw std::runtime_error("command task: cannot create " + path + ": " + errno_text(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("command task: cannot write " + path + ": " + errno_text(errno));
    done += static_cast<std::size_t>(n);
  }
  if (settings_.user.switch_user && ::fchown(fd.fd, settings_.user.uid, settings_.user.gid) != 0)
    throw std::runtime_error("command task: cannot give " + path + " to " + settings_.user.name + ": " + errno_text(errno));
  return path;
}

int Sandbox::open_output(const std::string& name, std::string& why) const {
  const int fd = ::openat(work_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    why = "its output file cannot be opened: " + errno_text(errno) + (errno == ELOOP ? " (a symbolic link)" : "");
    return -2;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    why = "its output file is not a regular file";
    return -2;
  }
  if (settings_.user.switch_user && st.st_uid != settings_.user.uid) {
    ::close(fd);
    why = "its output file belongs to uid " + std::to_string(st.st_uid) + ", not to the task's user " +
          settings_.user.name;
    return -2;
  }
  return fd;
}

SandboxEnd Sandbox::run(const SandboxRun& r) {
  SandboxEnd end;
  const auto& opt = settings_.options;
  const auto program = find_program(r.argv.at(0));
  if (!program) {
    end.start_error = "cannot run '" + r.argv[0] + "': " + errno_text(ENOENT) + " (looked up on PATH=" + clean_path + ")";
    return end;
  }
  const std::uint64_t memory = r.memory_bytes > 0 ? r.memory_bytes : opt.memory_bytes;
  const std::uint64_t file_bytes = r.file_bytes > 0 ? r.file_bytes : opt.file_bytes;
  const std::uint64_t max_out = r.max_stdout_bytes > 0 ? r.max_stdout_bytes : file_bytes;
  const std::uint64_t max_err = r.max_stderr_bytes > 0 ? r.max_stderr_bytes : file_bytes;

  std::unique_ptr<TaskCgroup> cgroup;
  CgroupHost* host = opt.cgroups == CgroupChoice::none ? nullptr : CgroupHost::get(opt.cgroups);
  if (host) {
    try {
      cgroup = std::make_unique<TaskCgroup>(*host, CgroupLimits{opt.pids, memory, r.cpus});
    } catch (const std::runtime_error& e) {
      end.start_error = "cannot make its cgroup: " + std::string(e.what());
      return end;
    }
    end.in_cgroup = true;
  }
  const bool memory_in_cgroup = cgroup && host->controllers().find("memory") != std::string::npos;

  // The environment: nothing of the worker's but two CPU tuning variables of the machine
  // that BLAS libraries need on some CPUs (docs/command-tasks.md, "Containment").
  std::vector<std::string> env = {std::string("PATH=") + clean_path, "HOME=" + work_, "TMPDIR=" + work_,
                                  "LANG=C.UTF-8", "USER=" + settings_.user.name, "LOGNAME=" + settings_.user.name};
  for (const char* keep : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"})
    if (const char* v = std::getenv(keep)) env.push_back(std::string(keep) + "=" + v);
  env.insert(env.end(), r.env.begin(), r.env.end());

  Fd in(::openat(work_fd_, r.stdin_file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (in.fd < 0) throw std::runtime_error("command task: cannot open its input " + r.stdin_file + ": " + errno_text(errno));
  int out_pipe[2], err_pipe[2], report_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("command task: pipe: " + errno_text(errno));
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("command task: pipe: " + errno_text(errno));
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);
  if (::pipe2(report_pipe, O_CLOEXEC) != 0) throw std::runtime_error("command task: pipe: " + errno_text(errno));
  Fd report_r(report_pipe[0]), report_w(report_pipe[1]);

  ChildPlan plan;
  plan.program = program->c_str();
  for (const auto& a : r.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (const auto& e : env) plan.envp.push_back(const_cast<char*>(e.c_str()));
  plan.envp.push_back(nullptr);
  plan.work = work_.c_str();
  plan.stdin_fd = in.fd;
  plan.stdout_fd = out_w.fd;
  plan.stderr_fd = err_w.fd;
  plan.report_fd = report_w.fd;
  if (cgroup) plan.join_fds = cgroup->join_fds();
  CPU_ZERO(&plan.cpus);
  for (int c : r.cpus)
    if (c >= 0 && c < CPU_SETSIZE) {
      CPU_SET(static_cast<std::size_t>(c), &plan.cpus);
      plan.pin = true;
    }
  plan.limits.emplace_back(RLIMIT_FSIZE, capped(RLIMIT_FSIZE, file_bytes));
  plan.limits.emplace_back(RLIMIT_NOFILE, capped(RLIMIT_NOFILE, opt.open_files));
  plan.limits.emplace_back(RLIMIT_CORE, rlimit{0, 0});
  std::uint64_t cpu_seconds = 0;
  if (r.timeout > 0) {  // CPU seconds: the wall-clock timeout on each of its cores, and one more
    cpu_seconds = static_cast<std::uint64_t>(std::ceil(r.timeout * std::max<std::uint32_t>(r.cores, 1))) + 1;
    rlimit now{};
    ::getrlimit(RLIMIT_CPU, &now);
    rlimit cpu{std::min<rlim_t>(cpu_seconds, now.rlim_max), std::min<rlim_t>(cpu_seconds + 2, now.rlim_max)};  // SIGXCPU, then SIGKILL
    plan.limits.emplace_back(RLIMIT_CPU, cpu);
  }
  if (settings_.user.switch_user && settings_.user.uid != 0)
    plan.limits.emplace_back(RLIMIT_NPROC, capped(RLIMIT_NPROC, opt.user_processes));
  if (memory > 0 && !memory_in_cgroup) plan.limits.emplace_back(RLIMIT_AS, capped(RLIMIT_AS, memory));
  plan.switch_user = settings_.user.switch_user;
  plan.uid = settings_.user.uid;
  plan.gid = settings_.user.gid;
  plan.parent = ::getpid();

  std::atomic<bool> shut_down{false};
  std::atomic<pid_t> live_pid{0};
  const std::uint64_t registration = detail::register_running([&shut_down, &live_pid] {
    shut_down = true;
    if (const pid_t p = live_pid.load(); p > 0) ::kill(p, SIGKILL);
  });
  if (registration == 0) {
    end.shutdown = true;
    end.start_error = "the worker is shutting down";
    return end;
  }
  struct Unregister {
    std::uint64_t id;
    ~Unregister() {
      if (id != 0) detail::unregister_running(id);
    }
  } unregister{registration};

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::_Fork();  // no atfork handlers: the child makes raw system calls only
  if (pid < 0) {
    end.start_error = "cannot fork: " + errno_text(errno);
    return end;
  }
  if (pid == 0) child_main(plan);
  live_pid = pid;
  if (shut_down) ::kill(pid, SIGKILL);
  in.reset();
  out_w.reset();
  err_w.reset();
  report_w.reset();

  const auto kill_everything = [&] {
    if (cgroup)
      cgroup->kill_all();
    else
      ::kill(-pid, SIGKILL);  // its group; the first process is not reaped yet, so the id is still its
  };
  // The report pipe is read in the loop below with the others (no wait of its own): end
  // of file when the program was executed, a ChildFailure when the child gave up before.
  ChildFailure failure{};
  bool failed_to_start = false;
  const auto read_report = [&] {
    ssize_t got = 0;
    while ((got = ::read(report_r.fd, &failure, sizeof failure)) < 0 && errno == EINTR) {
    }
    if (got < 0 && errno == EAGAIN) return;
    failed_to_start = got == static_cast<ssize_t>(sizeof failure);
    report_r.reset();
  };
  ::fcntl(report_r.fd, F_SETFL, O_NONBLOCK);

  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  Fd pidfd_guard(pidfd);
  ::fcntl(out_r.fd, F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.fd, F_SETFL, O_NONBLOCK);
  std::uint64_t err_bytes = 0;
  bool killed = false;
  std::array<std::byte, 65536> chunk;
  const auto stop_for = [&](std::string why) {
    if (killed) return;
    killed = true;
    end.limit = std::move(why);
    kill_everything();
  };
  // Reads what a pipe holds now; closes it at end of file.
  const auto drain = [&](Fd& fd, bool is_stdout) {
    for (;;) {
      const ssize_t n = ::read(fd.fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return;
      if (n == 0) {
        fd.reset();
        return;
      }
      const auto bytes = std::span<const std::byte>(chunk.data(), static_cast<std::size_t>(n));
      if (is_stdout) {
        end.stdout_bytes += bytes.size();
        if (end.stdout_bytes > max_out) {
          stop_for("standard output over " + size_text(max_out) + " (stopped while running)");
          fd.reset();
          return;
        }
        if (r.on_stdout && !killed) r.on_stdout(bytes);
      } else {
        err_bytes += bytes.size();
        if (err_bytes > max_err) {
          stop_for("standard error over " + size_text(max_err) + " (stopped while running)");
          fd.reset();
          return;
        }
        end.stderr_tail.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        if (end.stderr_tail.size() > 2 * r.keep_stderr_bytes + chunk.size()) {
          end.stderr_tail.erase(0, end.stderr_tail.size() - r.keep_stderr_bytes);
          end.stderr_cut = true;
        }
      }
    }
  };

  const auto deadline = t0 + std::chrono::duration<double>(r.timeout);
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
    if (r.timeout > 0 && !killed && std::chrono::steady_clock::now() >= deadline) {
      end.timed_out = true;
      stop_for("");
    }
    std::array<pollfd, 4> fds{};
    nfds_t n = 0;
    if (pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};
    if (report_r.fd >= 0) fds[n++] = {report_r.fd, POLLIN, 0};
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    int wait_ms = pidfd >= 0 ? -1 : 10;  // no pidfd (Linux < 5.3): look again every 10 ms
    if (r.timeout > 0 && !killed) {
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      const int left_ms = static_cast<int>(std::max(0.0, left) * 1000.0) + 1;
      wait_ms = wait_ms < 0 ? left_ms : std::min(wait_ms, left_ms);
    }
    if (::poll(fds.data(), n, wait_ms) < 0 && errno != EINTR) break;
    if (report_r.fd >= 0) read_report();
    if (out_r.fd >= 0) drain(out_r, true);
    if (err_r.fd >= 0) drain(err_r, false);
  }
  end.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Its first process has ended: so has the task. Nothing it started may outlive it.
  unregister.id = 0;
  detail::unregister_running(registration);
  end.shutdown = shut_down;
  kill_everything();
  while (::waitpid(pid, &end.status, 0) < 0 && errno == EINTR) {
  }
  if (report_r.fd >= 0) read_report();  // written before the child's _exit: there by now
  if (failed_to_start) {
    end.start_error = failure.step == Step::exec
                          ? "cannot run '" + r.argv[0] + "': " + errno_text(failure.error)
                          : "'" + r.argv[0] + "' " + step_text(failure.step) + ": " + errno_text(failure.error);
    return end;
  }
  end.started = true;
  // What is left in the pipes. Every writer is dead unless one escaped the fallback's
  // process group: then give up after 1 s.
  const auto drain_until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while ((out_r.fd >= 0 || err_r.fd >= 0) && std::chrono::steady_clock::now() < drain_until) {
    std::array<pollfd, 2> fds{};
    nfds_t n = 0;
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    ::poll(fds.data(), n, 100);
    if (out_r.fd >= 0) drain(out_r, true);
    if (err_r.fd >= 0) drain(err_r, false);
  }
  if (end.stderr_tail.size() > r.keep_stderr_bytes) {
    end.stderr_tail.erase(0, end.stderr_tail.size() - r.keep_stderr_bytes);
    end.stderr_cut = true;
  }
  if (end.limit.empty() && WIFSIGNALED(end.status)) {  // limits the kernel enforced
    const int sig = WTERMSIG(end.status);
    if (sig == SIGXCPU)
      end.limit = "CPU time over " + std::to_string(cpu_seconds) + " s (timeout x cores, RLIMIT_CPU)";
    else if (sig == SIGXFSZ)
      end.limit = "a file over " + size_text(file_bytes) + " (RLIMIT_FSIZE)";
    else if (sig == SIGKILL && cgroup && cgroup->oom_killed())
      end.limit = "memory over " + size_text(memory) + " (killed by the kernel)";
  }
  return end;
}

}  // namespace treefarm::tasks
