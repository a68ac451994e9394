#include "tools/emulate/StateFile.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace treefarm::emulate {

namespace fs = std::filesystem;

namespace {
void append(const std::string& path, const std::string& line, int flags) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | flags, 0644);
  if (fd < 0) throw std::runtime_error("cannot write the emulation state file " + path + ": " + std::strerror(errno));
  const std::string text = line + "\n";
  const ssize_t n = write(fd, text.data(), text.size());
  const int saved = errno;
  fsync(fd);
  close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write the emulation state file " + path + ": " + std::strerror(saved));
}
}  // namespace

std::string StateFile::default_dir() {
  std::error_code ec;
  fs::create_directories("/run/treefarm/emulate", ec);
  if (!ec && access("/run/treefarm/emulate", W_OK) == 0) return "/run/treefarm/emulate";
  fs::create_directories("/tmp/treefarm-emulate", ec);
  return "/tmp/treefarm-emulate";
}

StateFile::StateFile(std::string dir, std::string prefix) : prefix_(std::move(prefix)) {
  fs::create_directories(dir);
  path_ = (fs::path(dir) / (prefix_ + ".state")).string();
  const pid_t me = getpid();
  append(path_, "owner " + std::to_string(me) + " " + std::to_string(start_time(me)), O_CREAT | O_EXCL);
}

void StateFile::record(const std::string& kind, const std::string& value) {
  append(path_, kind + " " + value, O_APPEND);
}

void StateFile::orphan() {
  auto c = read(path_);
  std::string text = "owner 0 0\n";
  for (const auto& [kind, value] : c.items) text += kind + " " + value + "\n";
  const std::string tmp = path_ + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, path_);
}

void StateFile::remove() {
  std::error_code ec;
  fs::remove(path_, ec);
}

StateFile::Contents StateFile::read(const std::string& path) {
  Contents c;
  c.prefix = fs::path(path).stem().string();
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    if (kind == "owner") {
      in >> c.owner >> c.owner_start;
    } else if (kind == "netns" || kind == "cgroup") {
      std::string value;
      in >> value;
      if (!value.empty()) c.items.emplace_back(kind, value);
    }
  }
  return c;
}

std::vector<std::string> StateFile::list(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".state") files.push_back(e.path().string());
  return files;
}

unsigned long long StateFile::start_time(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream in(stat.substr(close_paren + 2));
  std::string field;
  // Field 3 (state) is the first after the command; start time is field 22.
  for (int i = 3; i < 22 && in >> field; ++i) {
  }
  unsigned long long start = 0;
  in >> start;
  return start;
}

bool StateFile::owner_alive(const Contents& c) {
  if (c.owner <= 0 || c.owner_start == 0 || start_time(c.owner) != c.owner_start) return false;
  // A killed owner that its parent has not reaped yet is a zombie: it is gone.
  std::ifstream f("/proc/" + std::to_string(c.owner) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close_paren = stat.rfind(')');
  const char state = close_paren != std::string::npos && close_paren + 2 < stat.size() ? stat[close_paren + 2] : 'X';
  return state != 'Z' && state != 'X';
}

}  // namespace treefarm::emulate
