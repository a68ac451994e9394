#include "runtime/metrics/TaskLog.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

namespace treefarm::metrics {

namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int err) {
  throw std::runtime_error("task log: cannot " + what + " " + path.string() + ": " + std::strerror(err));
}

}  // namespace

TaskLog::TaskLog(const std::filesystem::path& dir)
    : dir_(dir.empty() ? std::filesystem::temp_directory_path() : dir) {
  // An anonymous file: nothing to clean up after a crash.
  fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) {  // file systems without O_TMPFILE: create and unlink at once
    std::string tmpl = (dir_ / ".treefarm-tasklog-XXXXXX").string();
    fd_ = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd_ < 0) fail("create a spill file in", dir_, errno);
    ::unlink(tmpl.c_str());
  }
  pending_.reserve(buffer_records);
}

TaskLog::~TaskLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint32_t TaskLog::intern(std::string_view name) {
  if (!names_.empty() && names_.back() == name) return static_cast<std::uint32_t>(names_.size() - 1);
  const std::string key(name);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.push_back(key);
  ids_.emplace(key, id);
  return id;
}

void TaskLog::add(const PackedTaskRecord& r) {
  pending_.push_back(r);
  revoked_.push_back(false);
  ++live_;
  // After a full disk the records wait in memory; the spill file is tried again every
  // buffer_records records.
  if (pending_.size() >= buffer_records && pending_.size() % buffer_records == 0) write_pending();
}

void TaskLog::write_pending() {
  const auto* p = reinterpret_cast<const char*>(pending_.data());
  std::size_t left = pending_.size() * sizeof(PackedTaskRecord);
  auto offset = static_cast<off_t>(written_ * sizeof(PackedTaskRecord));
  while (left > 0) {
    const ssize_t n = ::pwrite(fd_, p, left, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC || errno == EDQUOT) {  // a full disk: keep them in memory (written_ stays)
        if (disk_full_.empty())
          disk_full_ = "task log: the spill file in " + dir_.string() + " cannot grow (" + std::strerror(errno) + ", " +
                       std::to_string(left) + " bytes to write): the task records stay in memory";
        return;
      }
      fail("write the spill file in", dir_, errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
    offset += n;
  }
  written_ += pending_.size();
  pending_.clear();
}

void TaskLog::scan(const std::function<void(std::uint64_t, const PackedTaskRecord&)>& f) const {
  std::vector<PackedTaskRecord> chunk(buffer_records);
  std::uint64_t pos = 0;
  while (pos < written_) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer_records, written_ - pos));
    auto* p = reinterpret_cast<char*>(chunk.data());
    std::size_t left = want * sizeof(PackedTaskRecord), got = 0;
    while (left > 0) {
      const ssize_t n = ::pread(fd_, p + got, left, static_cast<off_t>(pos * sizeof(PackedTaskRecord) + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("read the spill file in", dir_, n < 0 ? errno : EIO);
      got += static_cast<std::size_t>(n);
      left -= static_cast<std::size_t>(n);
    }
    for (std::size_t i = 0; i < want; ++i) f(pos + i, chunk[i]);
    pos += want;
  }
  for (std::size_t i = 0; i < pending_.size(); ++i) f(written_ + i, pending_[i]);
}

std::vector<std::pair<std::uint32_t, std::uint64_t>> TaskLog::revoke_via(std::uint32_t via) {
  return revoke_if([via](const PackedTaskRecord& r) { return r.via == via; });
}

std::vector<std::pair<std::uint32_t, std::uint64_t>> TaskLog::revoke_if(
    const std::function<bool(const PackedTaskRecord&)>& pred) {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> out;
  std::vector<std::uint64_t> positions;
  scan([&](std::uint64_t pos, const PackedTaskRecord& r) {
    if (!revoked_[pos] && pred(r)) {
      positions.push_back(pos);
      out.emplace_back(r.app, r.index);
    }
  });
  for (auto pos : positions) revoked_[pos] = true;
  live_ -= positions.size();
  return out;
}

void TaskLog::for_each(const std::function<void(const PackedTaskRecord&)>& f) const {
  scan([&](std::uint64_t pos, const PackedTaskRecord& r) {
    if (!revoked_[pos]) f(r);
  });
}

std::vector<PackedTaskRecord> TaskLog::last(std::size_t count) const {
  const std::size_t from_pending = std::min(count, pending_.size());
  const auto from_file = static_cast<std::size_t>(std::min<std::uint64_t>(count - from_pending, written_));
  std::vector<PackedTaskRecord> out(from_file);
  auto* p = reinterpret_cast<char*>(out.data());
  const std::uint64_t first = written_ - from_file;
  std::size_t left = from_file * sizeof(PackedTaskRecord), got = 0;
  while (left > 0) {
    const ssize_t n = ::pread(fd_, p + got, left, static_cast<off_t>(first * sizeof(PackedTaskRecord) + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("read the spill file in", dir_, n < 0 ? errno : EIO);
    got += static_cast<std::size_t>(n);
    left -= static_cast<std::size_t>(n);
  }
  out.insert(out.end(), pending_.end() - static_cast<std::ptrdiff_t>(from_pending), pending_.end());
  return out;
}

}  // namespace treefarm::metrics
