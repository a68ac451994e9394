#include "runtime/metrics/AtomicFile.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace treefarm::metrics {

namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int err) {
  throw std::runtime_error("cannot " + what + " " + path.string() + ": " + std::strerror(err));
}

/// write(2) until everything is written; EINTR retried.
void write_all(int fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail("write", path, err);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("open directory", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail("fsync directory", dir, err);
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  write_file_atomically(path, [content](const std::function<void(std::string_view)>& sink) { sink(content); });
}

void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::function<void(std::string_view)>& sink)>& produce) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp, errno);
  bool closed = false;  // write_all closes the file when it fails
  try {
    produce([&](std::string_view piece) {
      try {
        write_all(fd, piece, tmp);
      } catch (...) {
        closed = true;
        throw;
      }
    });
  } catch (...) {
    if (!closed) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("fsync", tmp, err);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("rename " + tmp.string() + " to", path, err);
  }
  fsync_directory(path.parent_path());
}

void check_writable_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create output directory " + dir.string() + ": " + ec.message());
  const auto probe = dir / ".treefarm-write-probe";
  write_file_atomically(probe, "probe\n");
  std::filesystem::remove(probe, ec);
}

}  // namespace treefarm::metrics
