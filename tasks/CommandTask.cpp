#include "tasks/CommandTask.hpp"

#include <fcntl.h>
#include <sys/stat.h>
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

#include "tasks/Sandbox.hpp"
#include "tasks/TaskEnvelope.hpp"

namespace treefarm::tasks {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int e) { return std::strerror(e); }

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

/// SHA-256 (libsodium) computed as the bytes come.
class StreamingSha256 {
 public:
  StreamingSha256() { crypto_hash_sha256_init(&state_); }
  void update(std::span<const std::byte> bytes) {
    crypto_hash_sha256_update(&state_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  }
  std::string hex() {
    std::array<unsigned char, crypto_hash_sha256_BYTES> digest{};
    crypto_hash_sha256_final(&state_, digest.data());
    return hex_of(digest);
  }

 private:
  crypto_hash_sha256_state state_{};
};

/// Reads a file the program wrote, `size` bytes at most, into `keep` (if not null) and
/// the digest; returns the bytes read.
std::uint64_t read_output(int fd, StreamingSha256& sha, std::vector<std::byte>* keep) {
  std::vector<std::byte> chunk(1 << 16);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("command task: cannot read its output: " + errno_text(errno));
    if (n == 0) return total;
    const std::span<const std::byte> got(chunk.data(), static_cast<std::size_t>(n));
    sha.update(got);
    if (keep) keep->insert(keep->end(), got.begin(), got.end());
    total += got.size();
  }
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
  // A bag with its own inputs: the task's placeholders travel in front of its input
  // (tasks/TaskEnvelope.hpp); the input file keeps the name the user gave it.
  std::vector<model::TaskField> fields;
  std::string input_name = "input";
  if (app.task_fields) {
    TaskEnvelope e;
    try {
      e = read_envelope(input);
    } catch (const std::invalid_argument& bad) {
      o.failed = true;
      o.error = bad.what();
      return o;
    }
    if (const auto why = e.error(); !why.empty()) {
      o.failed = true;
      o.error = why;
      return o;
    }
    fields = std::move(e.fields);
    input = e.input;
    for (const auto& [k, v] : fields)
      if (k == "name" && !v.empty() && v.size() <= 255 && v != "." && v != ".." && v != "output" &&
          v.find('/') == std::string::npos && v.find('\0') == std::string::npos)
        input_name = v;
  }
  Sandbox box(sandbox_settings());
  const std::string input_path = box.write_file(input_name, input);
  const std::string output_path = box.work_dir() + "/output";
  bool output_named = false;
  for (const auto& a : app.argv) output_named = output_named || a.find("{output}") != std::string::npos;

  SandboxRun run;
  run.argv = expand_argv(app.argv, index, input_path, output_path);
  if (!fields.empty()) {
    fields.emplace_back("input", input_path);
    fields.emplace_back("output", output_path);
    fields.emplace_back("index", std::to_string(index));  // found after the bag's own {index}
    for (std::size_t i = 0; i < run.argv.size(); ++i) run.argv[i] = model::expand_placeholders(app.argv[i], fields);
  }
  std::string cpu_list;
  for (int c : cpus) cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(c);
  run.env = {"TREEFARM_APP=" + app.name, "TREEFARM_TASK_INDEX=" + std::to_string(index),
             "TREEFARM_INPUT=" + input_path, "TREEFARM_OUTPUT=" + output_path, "TREEFARM_CPUS=" + cpu_list};
  run.stdin_file = input_name;
  run.cpus.assign(cpus.begin(), cpus.end());
  run.cores = app.cores_per_task;
  run.timeout = app.timeout;
  run.memory_bytes = app.memory_per_task;
  run.file_bytes = app.disk_per_task;
  run.keep_stderr_bytes = max_error_bytes;
  StreamingSha256 sha;
  auto kept = std::make_shared<std::vector<std::byte>>();
  if (!output_named) {  // standard output is the output: digested (and kept) as it comes
    if (app.send_output) run.max_stdout_bytes = app.max_output_bytes;
    run.on_stdout = [&](std::span<const std::byte> bytes) {
      sha.update(bytes);
      if (app.send_output) kept->insert(kept->end(), bytes.begin(), bytes.end());
    };
  }
  const SandboxEnd end = box.run(run);
  o.seconds = end.seconds;
  const std::string& program = run.argv[0];
  if (!end.started) {
    o.failed = true;
    o.error = end.start_error;
    return o;
  }

  std::string why;
  if (end.shutdown) {
    why = "stopped: the worker is shutting down";
  } else if (end.timed_out) {
    why = "timed out after " + std::to_string(app.timeout) + " s (killed)";
  } else if (!end.limit.empty()) {
    why = "stopped: " + end.limit;
    if (app.send_output && !output_named && end.stdout_bytes > app.max_output_bytes)
      why = "stopped: output over max_output_bytes " + std::to_string(app.max_output_bytes) +
            " (stopped while running): not sent back";
  } else if (WIFEXITED(end.status)) {
    o.exit_status = WEXITSTATUS(end.status);
    if (o.exit_status != 0) why = "exit status " + std::to_string(o.exit_status);
  } else if (WIFSIGNALED(end.status)) {
    why = "killed by signal " + std::to_string(WTERMSIG(end.status)) + " (" + ::strsignal(WTERMSIG(end.status)) + ")";
  }
  if (!why.empty()) {
    o.failed = true;
    std::string err = end.stderr_tail;
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    if (end.stderr_cut) err = "..." + err;
    o.error = "'" + program + "' " + why + (err.empty() ? std::string(", no stderr") : ": " + err);
    return o;
  }
  if (output_named) {
    // The file the program wrote: opened only if it is its own regular file (not a link
    // to a file of the worker's), its size checked before it is read.
    std::string refused;
    const int fd = box.open_output("output", refused);
    if (fd == -2) {
      o.failed = true;
      o.error = "'" + program + "' " + refused;
      return o;
    }
    struct stat st{};
    if (fd >= 0) ::fstat(fd, &st);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (app.send_output && size > app.max_output_bytes) {
      if (fd >= 0) ::close(fd);
      o.failed = true;
      o.output_bytes = size;
      o.error = "output of " + std::to_string(size) + " bytes, over max_output_bytes " +
                std::to_string(app.max_output_bytes) + ": not sent back";
      return o;
    }
    try {
      o.output_bytes = fd >= 0 ? read_output(fd, sha, app.send_output ? kept.get() : nullptr) : 0;
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (fd >= 0) ::close(fd);
  } else {
    o.output_bytes = end.stdout_bytes;
  }
  o.sha256 = sha.hex();
  if (app.send_output) o.output = std::move(kept);
  o.checksum = sha256_checksum(o.sha256);
  if (!app.expect_digest.empty() && o.sha256 != app.expect_digest) {
    o.failed = true;
    o.output = nullptr;
    o.error = "output digest " + o.sha256 + " (" + std::to_string(o.output_bytes) + " bytes), expected " +
              app.expect_digest;
  }
  return o;
}

void fill_command_input(const model::AppSpec& app, std::uint64_t stream, std::vector<std::byte>& out) {
  if (app.task_fields) {  // a calibration run of a bag with its own inputs: generated text, placeholders made up
    model::AppSpec plain = app;
    plain.task_fields = false;
    plain.input_file.clear();
    std::vector<std::byte> text;
    fill_command_input(plain, stream, text);
    write_envelope({{"name", "input.txt"}, {"stem", "input"}, {"line", "calibration"}, {"index", "0"}}, text, out);
    return;
  }
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
