#include "master/OutputFiles.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <stdio.h>
#include <unistd.h>

namespace treefarm::master {

namespace {
/// A file descriptor closed when it goes.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

OutputFiles::OutputFiles(std::filesystem::path out_dir, std::uint64_t quota)
    : dir_(std::move(out_dir) / "outputs"), quota_(quota) {}

bool OutputFiles::write(const std::string& app, const std::string& name, std::span<const std::byte> bytes) {
  if (over_quota_ || bytes.size() > quota_ - std::min(quota_, written_)) {
    over_quota_ = true;
    return false;
  }
  const auto dir = dir_ / app;
  std::filesystem::create_directories(dir);
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  if (d.fd < 0) throw std::runtime_error("cannot open the directory " + dir.string() + ": " + std::strerror(errno));
  const std::string part = name + ".part";
  // A .part left by a crash (or anything planted there) goes first: unlinkat removes a
  // symbolic link itself, never its target.
  if (::unlinkat(d.fd, part.c_str(), 0) != 0 && errno != ENOENT)
    throw std::runtime_error("cannot remove " + (dir / part).string() + ": " + std::strerror(errno));
  {
    Fd f{::openat(d.fd, part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (f.fd < 0) throw std::runtime_error("cannot create " + (dir / part).string() + ": " + std::strerror(errno));
    for (std::size_t at = 0; at < bytes.size();) {
      const auto n = ::write(f.fd, bytes.data() + at, bytes.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("cannot write " + (dir / part).string() + ": " + std::strerror(errno));
      at += static_cast<std::size_t>(n);
    }
  }
  // rename replaces whatever has the final name (a link itself, not its target): a crash
  // leaves no half-written output under its name.
  if (::renameat(d.fd, part.c_str(), d.fd, name.c_str()) != 0)
    throw std::runtime_error("cannot rename " + (dir / part).string() + ": " + std::strerror(errno));
  written_ += bytes.size();
  return true;
}

std::vector<std::pair<std::string, std::filesystem::path>> OutputFiles::finished(const std::filesystem::path& out_dir) {
  std::vector<std::pair<std::string, std::filesystem::path>> files;
  std::error_code ec;
  for (const auto& app : std::filesystem::directory_iterator(out_dir / "outputs", ec)) {
    if (!app.is_directory()) continue;
    for (const auto& f : std::filesystem::directory_iterator(app.path(), ec))
      if (f.is_regular_file() && f.path().extension() != ".part") files.emplace_back(app.path().filename().string(), f.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace treefarm::master
