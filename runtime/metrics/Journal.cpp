#include "runtime/metrics/Journal.hpp"
#include "runtime/metrics/AtomicFile.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

namespace treefarm::metrics {

namespace {

constexpr const char* magic = "treefarm-journal 1 ";

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int err) {
  throw std::runtime_error("journal: cannot " + what + " " + path.string() + ": " + std::strerror(err));
}

/// Writes all of `data` (no-op when empty) and fsyncs; the failure's message, or "". A
/// write that fails part-way (a full disk) is cut back to the file's size before it, so
/// the journal never ends with a truncated line.
std::string write_and_sync(int fd, std::string_view data, const std::filesystem::path& path) {
  if (data.empty()) return {};
  const off_t before = ::lseek(fd, 0, SEEK_END);
  const std::size_t batch = data.size();
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      std::string kept = "the journal ends with its last whole batch";
      if (before < 0 || ::ftruncate(fd, before) != 0) kept = "the journal may end with a cut line, skipped when it is read";
      return "journal: cannot write " + path.string() + ": " + std::strerror(err) + " (" +
             space_note(path, batch, false, " for a batch of results") + "); " + kept;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0) return "journal: cannot fsync " + path.string() + ": " + std::strerror(errno);
  return {};
}

std::string clean(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = '_';
  return out;
}

}  // namespace

std::string journal_fingerprint(std::uint64_t seed, const std::vector<std::string>& app_names,
                                const std::vector<std::string>& kernels, const std::vector<std::uint64_t>& tasks) {
  std::string s = "seed=" + std::to_string(seed);
  for (std::size_t k = 0; k < app_names.size(); ++k)
    s += " " + clean(app_names[k]) + ":" + kernels.at(k) + ":" + std::to_string(tasks.at(k));
  for (char& c : s)
    if (c == '\t' || c == '\n') c = '_';
  return s;
}

Journal::Journal(std::filesystem::path path, const std::string& fingerprint, bool append) : path_(std::move(path)) {
  const bool exists = std::filesystem::exists(path_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd_ < 0) fail("open", path_, errno);
  std::string first;
  if (!append || !exists || std::filesystem::file_size(path_) == 0) {
    first = std::string(magic) + fingerprint + "\n";
  } else {
    // A torn last line from a crash: end it with a marker the loader skips, so that the
    // next entry starts on its own line.
    std::ifstream in(path_, std::ios::binary);
    in.seekg(-1, std::ios::end);
    char last = '\n';
    if (in.get(last) && last != '\n') first = "#torn\n";
  }
  if (const auto failure = write_and_sync(fd_, first, path_); !failure.empty()) {
    ::close(fd_);
    throw std::runtime_error(failure);
  }
  writer_ = std::thread([this] { write_batches(); });
}

Journal::~Journal() {
  try {
    flush();
  } catch (...) {
  }
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  writer_.join();
  if (fd_ >= 0) ::close(fd_);
}

void Journal::add(const JournalEntry& e) {
  // One line per verified result, on the master's hot path: std::to_chars writes exactly
  // what printf's "%.9g" does (the standard defines it so) without printf's per-call
  // format parsing and multi-precision digit loop (a tenth of the master's time
  // per task went to snprintf here).
  char buf[96];  // at most 10 + 20 + 2 x 16 digits and signs + 4 tabs
  char* p = buf;
  char* const end = buf + sizeof buf - 1;  // room for the tab after every field
  const auto field = [&](auto value, auto... format) {
    p = std::to_chars(p, end, value, format...).ptr;
    *p++ = '\t';
  };
  field(e.app);
  field(static_cast<unsigned long long>(e.index));
  field(e.completed_at, std::chars_format::general, 9);
  field(e.compute_seconds, std::chars_format::general, 9);
  pending_.append(buf, static_cast<std::size_t>(p - buf));
  const std::size_t at = pending_.size();
  pending_ += e.node;
  for (std::size_t i = at; i < pending_.size(); ++i)  // clean(), without a copy of the name
    if (pending_[i] == '\t' || pending_[i] == '\n' || pending_[i] == '\r') pending_[i] = '_';
  pending_ += '\n';
  if (++pending_count_ >= batch_size) hand_over(false);
}

void Journal::revoke(std::uint32_t app, std::uint64_t index) {
  pending_ += "-\t" + std::to_string(app) + "\t" + std::to_string(index) + "\n";
  if (++pending_count_ >= batch_size) hand_over(false);
}

void Journal::sync() { hand_over(false); }

void Journal::flush() { hand_over(true); }

void Journal::rethrow_locked() const {
  if (!error_.empty()) throw std::runtime_error(error_);
}

void Journal::hand_over(bool wait_for_disk) {
  std::unique_lock lock(mutex_);
  rethrow_locked();
  if (!pending_.empty()) {
    changed_.wait(lock, [&] { return writing_.empty(); });  // one batch in the writer's hands
    rethrow_locked();
    writing_.swap(pending_);  // pending_ takes the written batch's buffer back, cleared
    pending_count_ = 0;
    ++handed_;
    changed_.notify_all();
  }
  if (wait_for_disk) {
    changed_.wait(lock, [&] { return written_ == handed_; });
    rethrow_locked();
  }
}

void Journal::write_batches() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return !writing_.empty() || stop_; });
    if (writing_.empty()) return;  // stopped with nothing left
    // The caller does not touch writing_ while it is non-empty: write it unlocked.
    lock.unlock();
    const std::string failure = write_and_sync(fd_, writing_, path_);
    lock.lock();
    if (!failure.empty() && error_.empty()) error_ = failure;
    writing_.clear();
    ++written_;
    changed_.notify_all();
  }
}

JournalReader::JournalReader(std::filesystem::path path, std::string fingerprint, std::vector<std::uint64_t> tasks)
    : path_(std::move(path)), fingerprint_(std::move(fingerprint)), tasks_(std::move(tasks)), done_(tasks_.size()) {
  for (std::size_t k = 0; k < tasks_.size(); ++k) done_[k].assign(tasks_[k], false);
}

const std::vector<JournalEntry>& JournalReader::read() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw std::runtime_error("journal: cannot read " + path_.string());
  in.seekg(static_cast<std::streamoff>(offset_));
  const std::string more((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  seen_bytes_ = offset_ + more.size();
  std::size_t pos = 0;
  while (pos < more.size()) {
    const auto end = more.find('\n', pos);
    if (end == std::string::npos) break;  // torn last line (a crash cut it) or one being written
    ++line_no_;
    try {
      parse(more.substr(pos, end - pos));
    } catch (...) {
      --line_no_;  // read again (and refused again) by the next call
      throw;
    }
    offset_ += end + 1 - pos;
    pos = end + 1;
  }
  return out_;
}

void JournalReader::parse(const std::string& line) {
  auto bad = [&](const std::string& field, const std::string& why) {
    throw std::runtime_error(path_.string() + ":" + std::to_string(line_no_) + ": field '" + field + "': " + why);
  };
  if (line_no_ == 1) {
    if (line.rfind(magic, 0) != 0) bad("header", "not a treefarm journal");
    const auto got = line.substr(std::strlen(magic));
    if (got != fingerprint_)
      bad("header", "journal of another experiment (" + got + "), this one is " + fingerprint_ +
                        ": remove the journal or run without --resume");
    return;
  }
  if (line.empty() || line[0] == '#') return;
  if (line.size() >= 5 && line.compare(line.size() - 5, 5, "#torn") == 0) return;  // cut by a crash
  std::istringstream fields(line);
  std::string f_app, f_index, f_at, f_compute, node;
  if (line.rfind("-\t", 0) == 0) {  // revocation: "-<TAB>app<TAB>index"
    std::string dash;
    std::uint32_t app = 0;
    std::uint64_t index = 0;
    if (!std::getline(fields, dash, '\t') || !std::getline(fields, f_app, '\t') || !std::getline(fields, f_index))
      bad("line", "a revocation needs 3 tab-separated fields (-, app, index)");
    const auto number = [&](const std::string& text, auto& v, const char* name) {
      const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
      if (r.ec != std::errc() || r.ptr != text.data() + text.size()) bad(name, "'" + text + "' is not a number");
    };
    number(f_app, app, "app");
    number(f_index, index, "index");
    if (app >= tasks_.size()) bad("app", std::to_string(app) + " out of range");
    if (index >= tasks_[app]) bad("index", std::to_string(index) + " out of range");
    if (done_[app][index]) {
      done_[app][index] = false;
      std::erase_if(out_, [&](const JournalEntry& e) { return e.app == app && e.index == index; });
    }
    return;
  }
  if (!std::getline(fields, f_app, '\t') || !std::getline(fields, f_index, '\t') ||
      !std::getline(fields, f_at, '\t') || !std::getline(fields, f_compute, '\t') || !std::getline(fields, node))
    bad("line", "expected 5 tab-separated fields (app, index, completed_at, compute_seconds, node)");
  JournalEntry e;
  auto num = [&](const std::string& s, auto& v, const char* name) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) bad(name, "'" + s + "' is not a number");
  };
  num(f_app, e.app, "app");
  num(f_index, e.index, "index");
  num(f_at, e.completed_at, "completed_at");
  num(f_compute, e.compute_seconds, "compute_seconds");
  e.node = node;
  if (e.app >= tasks_.size()) bad("app", std::to_string(e.app) + " out of range");
  if (e.index >= tasks_[e.app]) bad("index", std::to_string(e.index) + " out of range");
  if (done_[e.app][e.index]) return;
  done_[e.app][e.index] = true;
  out_.push_back(std::move(e));
}

std::vector<JournalEntry> load_journal(const std::filesystem::path& path, const std::string& fingerprint,
                                       const std::vector<std::uint64_t>& tasks) {
  JournalReader reader(path, fingerprint, tasks);
  auto out = reader.read();
  if (reader.bytes_seen() == 0) throw std::runtime_error(path.string() + ": empty journal (no header)");
  return out;
}

}  // namespace treefarm::metrics
