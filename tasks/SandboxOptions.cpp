#include "tasks/SandboxOptions.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

namespace treefarm::tasks {

namespace {

std::mutex mutex;
std::optional<SandboxSettings> settings;  // guarded by mutex
bool stopping = false;                     // guarded by mutex
std::uint64_t next_registration = 1;       // guarded by mutex
std::map<std::uint64_t, std::function<void()>> running;  // guarded by mutex

std::optional<passwd> lookup(const std::string& name, std::vector<char>& buffer) {
  passwd pw{}, *found = nullptr;
  buffer.resize(16384);
  char* end = nullptr;
  const unsigned long uid = std::strtoul(name.c_str(), &end, 10);
  const bool numeric = !name.empty() && end != nullptr && *end == '\0';
  const int rc = numeric ? ::getpwuid_r(static_cast<uid_t>(uid), &pw, buffer.data(), buffer.size(), &found)
                         : ::getpwnam_r(name.c_str(), &pw, buffer.data(), buffer.size(), &found);
  if (rc != 0 || found == nullptr) return std::nullopt;
  return pw;
}

SandboxSettings resolve(const SandboxOptions& options) {
  SandboxSettings s;
  s.options = options;
  s.user = resolve_run_as(options.run_as);
  s.scratch = options.scratch;
  if (s.scratch.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    s.scratch = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  struct stat st{};
  if (::stat(s.scratch.c_str(), &st) != 0)
    throw std::invalid_argument("--scratch " + s.scratch + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw std::invalid_argument("--scratch " + s.scratch + ": not a folder");
  return s;
}

}  // namespace

RunAsUser resolve_run_as(const std::string& run_as) {
  const uid_t self = ::geteuid();
  std::vector<char> buffer;
  RunAsUser u;
  if (run_as.empty() && self != 0) {
    u.uid = self;
    u.gid = ::getegid();
    const auto pw = lookup(std::to_string(self), buffer);
    u.name = pw ? pw->pw_name : std::to_string(self);
    return u;
  }
  const std::string name = run_as.empty() ? "nobody" : run_as;
  const auto pw = lookup(name, buffer);
  if (!pw)
    throw std::invalid_argument("--run-as " + name + ": no such user on this machine" +
                                (run_as.empty() ? " (a worker running as root runs command tasks as 'nobody' "
                                                  "unless --run-as names another user)"
                                                : ""));
  u.uid = pw->pw_uid;
  u.gid = pw->pw_gid;
  u.name = pw->pw_name;
  if (u.uid != self && self != 0) {
    const auto me = lookup(std::to_string(self), buffer);
    throw std::invalid_argument("--run-as " + name + ": this worker runs as " + (me ? me->pw_name : std::string("?")) +
                                " (uid " + std::to_string(self) +
                                "), and only a worker running as root can run tasks as another user");
  }
  u.switch_user = u.uid != self || u.gid != ::getegid() || self == 0;
  return u;
}

void configure_sandbox(const SandboxOptions& options) {
  auto s = resolve(options);
  std::lock_guard lock(mutex);
  settings = std::move(s);
  stopping = false;
}

SandboxSettings sandbox_settings() {
  std::lock_guard lock(mutex);
  if (!settings) settings = resolve(SandboxOptions{});
  return *settings;
}

std::size_t stop_all_commands() {
  // Under the lock: a task unregisters (under it too) before its program is reaped, so
  // each kill reaches a process that is still its own.
  std::lock_guard lock(mutex);
  stopping = true;
  for (auto& [id, kill] : running) kill();
  return running.size();
}

void allow_commands() {
  std::lock_guard lock(mutex);
  stopping = false;
}

namespace detail {

std::uint64_t register_running(std::function<void()> kill) {
  std::lock_guard lock(mutex);
  if (stopping) return 0;
  const std::uint64_t id = next_registration++;
  running.emplace(id, std::move(kill));
  return id;
}

void unregister_running(std::uint64_t registration) {
  std::lock_guard lock(mutex);
  running.erase(registration);
}

}  // namespace detail

}  // namespace treefarm::tasks
