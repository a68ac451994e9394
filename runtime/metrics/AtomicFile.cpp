#include "runtime/metrics/AtomicFile.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace treefarm::metrics {

namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int err) {
  throw std::runtime_error("cannot " + what + " " + path.string() + ": " + std::strerror(err));
}

/// A failed write: its errno and the bytes the file needed at least.
struct WriteFailed {
  int err = 0;
  std::uint64_t needed = 0;
};

/// write(2) until everything is written; EINTR retried. `written` counts the file's bytes
/// so far. Throws WriteFailed (the file is left open).
void write_all(int fd, std::string_view data, std::uint64_t& written) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw WriteFailed{errno, written + data.size()};
    }
    data.remove_prefix(static_cast<std::size_t>(n));
    written += static_cast<std::uint64_t>(n);
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

std::string space_note(const std::filesystem::path& path, std::uint64_t needed, bool at_least, const std::string& what) {
  std::string note = (at_least ? "it needed more than " : "it needed ") + std::to_string(needed) + " bytes" + what;
  struct statvfs fs {};
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (::statvfs(dir.c_str(), &fs) == 0)
    note += ", " + std::to_string(static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize) + " bytes are free on its file system";
  return note;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  write_file_atomically(path, [content](const std::function<void(std::string_view)>& sink) { sink(content); });
}

void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::function<void(std::string_view)>& sink)>& produce) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp, errno);
  std::uint64_t written = 0;
  try {
    produce([&](std::string_view piece) { write_all(fd, piece, written); });
  } catch (const WriteFailed& f) {
    ::close(fd);
    ::unlink(tmp.c_str());  // first: the space it took counts as free in the message
    throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(f.err) + " (" +
                             space_note(path, f.needed, true, "") + "); " + path.string() + " is left as it was");
  } catch (...) {
    ::close(fd);
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
