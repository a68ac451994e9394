#include "tasks/CommandTask.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace treefarm::tasks {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int e) { return std::strerror(e); }

/// A private directory for one task, removed when it goes out of scope.
class TaskDir {
 public:
  TaskDir() {
    std::string tmpl = (fs::temp_directory_path() / "treefarm-task-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("command task: cannot create a directory in " + fs::temp_directory_path().string() +
                               ": " + errno_text(errno));
    path_ = tmpl;
  }
  ~TaskDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TaskDir(const TaskDir&) = delete;
  TaskDir& operator=(const TaskDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("command task: cannot write " + path.string() + ": " + errno_text(errno));
}

/// The last `limit` bytes of a file ("" if it cannot be read).
std::string tail_of(const fs::path& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<std::size_t>(in.tellg());
  const std::size_t keep = std::min(size, limit);
  in.seekg(static_cast<std::streamoff>(size - keep));
  std::string text(keep, '\0');
  in.read(text.data(), static_cast<std::streamsize>(keep));
  text.resize(static_cast<std::size_t>(in.gcount()));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return size > keep ? "..." + text : text;
}

/// A SHA-256 digest as 64 lowercase hex digits.
std::string hex_of(const std::array<unsigned char, crypto_hash_sha256_BYTES>& digest) {
  std::string hex(2 * digest.size(), '\0');
  static constexpr char digits[] = "0123456789abcdef";
  for (std::size_t i = 0; i < digest.size(); ++i) {
    hex[2 * i] = digits[digest[i] >> 4];
    hex[2 * i + 1] = digits[digest[i] & 15];
  }
  return hex;
}

/// SHA-256 (libsodium) of a file, streamed; its size in `bytes`.
std::string sha256_of(const fs::path& path, std::uint64_t& bytes) {
  crypto_hash_sha256_state state;
  crypto_hash_sha256_init(&state);
  bytes = 0;
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::vector<char> chunk(1 << 16);
    while (in) {
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      const auto got = static_cast<std::size_t>(in.gcount());
      if (got == 0) break;
      crypto_hash_sha256_update(&state, reinterpret_cast<const unsigned char*>(chunk.data()), got);
      bytes += got;
    }
  }
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest{};
  crypto_hash_sha256_final(&state, digest.data());
  return hex_of(digest);
}

/// The whole content of a file (empty if it does not exist: a program that wrote nothing).
std::shared_ptr<std::vector<std::byte>> read_whole(const fs::path& path, std::uint64_t size) {
  auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(size));
  std::ifstream in(path, std::ios::binary);
  if (size > 0) {
    in.read(reinterpret_cast<char*>(bytes->data()), static_cast<std::streamsize>(size));
    if (static_cast<std::uint64_t>(in.gcount()) != size)
      throw std::runtime_error("command task: cannot read its output " + path.string() + ": " + errno_text(errno));
  }
  return bytes;
}

/// Pins the calling thread to `cpus` while it lives (a spawned child inherits it), then
/// restores the thread's previous affinity.
class ScopedAffinity {
 public:
  explicit ScopedAffinity(std::span<const int> cpus) {
    if (cpus.empty()) return;
    if (::pthread_getaffinity_np(::pthread_self(), sizeof saved_, &saved_) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(static_cast<std::size_t>(c), &set);
    active_ = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
  }
  ~ScopedAffinity() {
    if (active_) ::pthread_setaffinity_np(::pthread_self(), sizeof saved_, &saved_);
  }
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;

 private:
  cpu_set_t saved_{};
  bool active_ = false;
};

/// posix_spawn attributes and file actions, released on scope exit.
struct SpawnSetup {
  posix_spawnattr_t attr{};
  posix_spawn_file_actions_t actions{};
  SpawnSetup() {
    ::posix_spawnattr_init(&attr);
    ::posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

/// Waits for `pid` until `timeout` seconds (0: forever); kills its process group when the
/// time is up. Returns the wait status; `timed_out` says whether it was killed for time.
int wait_child(pid_t pid, double timeout, bool& timed_out) {
  timed_out = false;
  int status = 0;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  for (;;) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) {  // ECHILD: someone else reaped it (SIGCHLD ignored?)
      status = -1;
      break;
    }
    int wait_ms = -1;
    if (timeout > 0) {
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        ::kill(-pid, SIGKILL);
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      wait_ms = static_cast<int>(std::min(left * 1000.0 + 1.0, 1000.0));
    }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, wait_ms);
    } else {  // no pidfd (kernel < 5.3): poll the child
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms < 0 ? 5 : std::min(wait_ms, 5)));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return status;
}

/// splitmix64 (Steele, Lea, Flood 2014), as tasks/Payload.cpp: the same text on every machine.
std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// 256 lowercase words of 2 to 9 letters, the same everywhere.
const std::vector<std::string>& vocabulary() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> w;
    std::uint64_t state = 20;
    for (int i = 0; i < 256; ++i) {
      std::uint64_t r = splitmix(state);
      std::string word(2 + r % 8, 'a');
      r >>= 3;
      for (auto& c : word) {
        c = static_cast<char>('a' + r % 26);
        r = r / 26 == 0 ? splitmix(state) : r / 26;
      }
      w.push_back(std::move(word));
    }
    return w;
  }();
  return words;
}

}  // namespace

std::vector<std::string> expand_argv(const std::vector<std::string>& argv, std::uint64_t index,
                                     const std::string& input_path, const std::string& output_path) {
  const std::array<std::pair<std::string_view, std::string>, 3> fields = {
      {{"{index}", std::to_string(index)}, {"{input}", input_path}, {"{output}", output_path}}};
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const auto& arg : argv) {
    std::string s;
    for (std::size_t i = 0; i < arg.size();) {
      bool replaced = false;
      for (const auto& [name, value] : fields) {
        if (arg.compare(i, name.size(), name) == 0) {
          s += value;
          i += name.size();
          replaced = true;
          break;
        }
      }
      if (!replaced) s += arg[i++];
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string sha256_hex(std::span<const std::byte> bytes) {
  static const int sodium = ::sodium_init();  // thread-safe, idempotent
  if (sodium < 0) throw std::runtime_error("sha256_hex: libsodium cannot initialise");
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest{};
  crypto_hash_sha256(digest.data(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return hex_of(digest);
}

double sha256_checksum(const std::string& sha256_hex) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 16 && i < sha256_hex.size(); ++i) {
    const char c = sha256_hex[i];
    v = v << 4 | static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return static_cast<double>(v >> 11);  // 53 bits: exact in a double
}

CommandOutcome run_command(const model::AppSpec& app, std::span<const std::byte> input, std::uint64_t index,
                           std::span<const int> cpus) {
  if (app.kernel != model::Kernel::command || app.argv.empty())
    throw std::invalid_argument("run_command: application '" + app.name + "' is not a command application");
  static const int sodium = ::sodium_init();  // thread-safe, idempotent; < 0 only if it cannot work
  if (sodium < 0) throw std::runtime_error("run_command: libsodium cannot initialise");

  CommandOutcome o;
  TaskDir dir;
  const fs::path input_path = dir.path() / "input";
  const fs::path output_path = dir.path() / "output";
  const fs::path stdout_path = dir.path() / "stdout";
  const fs::path stderr_path = dir.path() / "stderr";
  write_file(input_path, input);
  bool output_named = false;
  for (const auto& a : app.argv) output_named = output_named || a.find("{output}") != std::string::npos;
  const auto args = expand_argv(app.argv, index, input_path.string(), output_path.string());
  std::vector<char*> c_args;
  for (const auto& a : args) c_args.push_back(const_cast<char*>(a.c_str()));
  c_args.push_back(nullptr);

  SpawnSetup setup;
  const std::string in_s = input_path.string();
  const std::string out_s = (output_named ? stdout_path : output_path).string();
  const std::string err_s = stderr_path.string();
  ::posix_spawn_file_actions_addopen(&setup.actions, 0, in_s.c_str(), O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&setup.actions, 1, out_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::posix_spawn_file_actions_addopen(&setup.actions, 2, err_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  // The node's own signal handling (blocked signals, handlers) must not reach the program.
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&setup.attr, &empty);
  ::posix_spawnattr_setsigdefault(&setup.attr, &all);
  ::posix_spawnattr_setpgroup(&setup.attr, 0);  // its own group: a timeout kills its children too
  ::posix_spawnattr_setflags(&setup.attr, static_cast<short>(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                             POSIX_SPAWN_SETPGROUP));

  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  int spawned = 0;
  {
    ScopedAffinity pin(cpus);
    spawned = ::posix_spawnp(&pid, c_args[0], &setup.actions, &setup.attr, c_args.data(), environ);
  }
  if (spawned != 0) {
    o.failed = true;
    o.error = "cannot run '" + args[0] + "': " + errno_text(spawned);
    return o;
  }
  bool timed_out = false;
  const int status = wait_child(pid, app.timeout, timed_out);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::string why;
  if (timed_out) {
    why = "timed out after " + std::to_string(app.timeout) + " s (killed)";
  } else if (WIFEXITED(status)) {
    o.exit_status = WEXITSTATUS(status);
    if (o.exit_status != 0) why = "exit status " + std::to_string(o.exit_status);
  } else if (status == -1) {
    why = "could not be waited for (its exit status is unknown)";
  } else if (WIFSIGNALED(status)) {
    why = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  }
  if (!why.empty()) {
    o.failed = true;
    const std::string err = tail_of(stderr_path, max_error_bytes);
    o.error = "'" + args[0] + "' " + why + (err.empty() ? std::string(", no stderr") : ": " + err);
    return o;
  }
  if (app.send_output) {
    // Output files (docs/command-tasks.md): the bytes go back up with the result, so the
    // limit is checked before they are read.
    std::error_code ec;
    const std::uint64_t size = fs::exists(output_path, ec) ? fs::file_size(output_path, ec) : 0;
    if (size > app.max_output_bytes) {
      o.failed = true;
      o.output_bytes = size;
      o.error = "output of " + std::to_string(size) + " bytes, over max_output_bytes " +
                std::to_string(app.max_output_bytes) + ": not sent back";
      return o;
    }
    o.output = read_whole(output_path, size);
    o.output_bytes = size;
    o.sha256 = sha256_hex(*o.output);
  } else {
    o.sha256 = sha256_of(output_path, o.output_bytes);
  }
  o.checksum = sha256_checksum(o.sha256);
  if (!app.expect_digest.empty() && o.sha256 != app.expect_digest) {
    o.failed = true;
    o.error = "output digest " + o.sha256 + " (" + std::to_string(o.output_bytes) + " bytes), expected " +
              app.expect_digest;
  }
  return o;
}

void fill_command_input(const model::AppSpec& app, std::uint64_t stream, std::vector<std::byte>& out) {
  if (!app.input_file.empty()) {
    // One file, read once per process and copied per task (its bytes travel with each task).
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const std::vector<std::byte>>> cache;
    std::shared_ptr<const std::vector<std::byte>> content;
    {
      std::lock_guard lock(mutex);
      auto& slot = cache[app.input_file];
      if (!slot) {
        std::ifstream in(app.input_file, std::ios::binary);
        if (!in) throw std::runtime_error("cannot read input_file '" + app.input_file + "': " + errno_text(errno));
        auto bytes = std::make_shared<std::vector<std::byte>>();
        std::vector<char> chunk(1 << 16);
        while (in) {
          in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
          const auto* p = reinterpret_cast<const std::byte*>(chunk.data());
          bytes->insert(bytes->end(), p, p + in.gcount());
        }
        slot = std::move(bytes);
      }
      content = slot;
    }
    if (content->size() != app.bytes)
      throw std::runtime_error("input_file '" + app.input_file + "' has " + std::to_string(content->size()) +
                               " bytes, " + std::to_string(app.bytes) + " when the experiment was read");
    out.assign(content->begin(), content->end());
    return;
  }
  const auto& words = vocabulary();
  out.resize(app.bytes);
  std::size_t i = 0, column = 0;
  std::uint64_t state = stream;
  while (i < out.size()) {
    std::uint64_t r = splitmix(state);
    for (int k = 0; k < 8 && i < out.size(); ++k, r >>= 8) {
      const std::string& w = words[r & 255];
      for (char c : w) {
        if (i == out.size()) break;
        out[i++] = static_cast<std::byte>(c);
      }
      column += w.size() + 1;
      if (i < out.size()) out[i++] = static_cast<std::byte>(column > 72 ? '\n' : ' ');
      if (column > 72) column = 0;
    }
  }
}

}  // namespace treefarm::tasks
