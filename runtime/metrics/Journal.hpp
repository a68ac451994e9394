#pragma once
/// @file Journal.hpp
/// The master's journal: every verified result appended to
/// OUT/journal.tsv in fsync'd batches, so that a master killed with -9 loses at most two
/// batches, and `--resume` redoes only what the journal lacks. Format: docs/fault-tolerance.md.
/// The writes and fsyncs run on the journal's own thread (an fsync of 1–3 ms on
/// the master's loop every 4096 results stalled the dispatch); the loop only appends.

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace treefarm::metrics {

/// One verified, completed task.
struct JournalEntry {
  std::uint32_t app = 0;           ///< Application index in the experiment.
  std::uint64_t index = 0;         ///< Task index within the application.
  double completed_at = 0;         ///< seconds since the start of the (resumed) run
  double compute_seconds = 0;      ///< seconds the kernel ran
  std::string node;                ///< Node that computed it.
};

/// Appends entries to a journal file. A full batch, or one handed over by sync(), is written
/// and fsync'd by the journal's writer thread while the caller goes on; one batch at a time
/// is in the writer's hands (a caller handing over the next one waits for it). flush()
/// waits until everything queued is on disk. A failed write or fsync is thrown by the next
/// add(), revoke(), sync() or flush().
class Journal {
 public:
  /// Opens `path`. `fingerprint` identifies the experiment (journal_fingerprint): it is
  /// the file's first line. `append`: keep existing entries (resume; the file's
  /// fingerprint must match, checked by load_journal first); otherwise truncate.
  /// @throws std::runtime_error naming the path when it cannot be opened or written.
  Journal(std::filesystem::path path, const std::string& fingerprint, bool append);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  /// Queues an entry; hands the batch to the writer once it holds `batch_size` entries.
  void add(const JournalEntry& e);
  /// Queues a revocation: the entry of task `index` of application `app` no longer counts
  /// (its node was caught forging results; the task is done again). Line "-<TAB>app<TAB>index".
  void revoke(std::uint32_t app, std::uint64_t index);
  /// Hands the pending entries to the writer without waiting for the disk (no-op when none).
  /// @throws std::runtime_error naming the path on an earlier failed write or fsync.
  void sync();
  /// Writes and fsyncs every queued entry, and returns once they are on disk.
  /// @throws std::runtime_error naming the path on a failed write or fsync.
  void flush();
  const std::filesystem::path& path() const { return path_; }

  /// Entries per fsync'd batch (a kill -9 loses at most two, or the last second or two).
  static constexpr std::size_t batch_size = 4096;

 private:
  void hand_over(bool wait_for_disk);
  void write_batches();  ///< the writer thread
  void rethrow_locked() const;

  std::filesystem::path path_;
  int fd_ = -1;
  std::string pending_;  ///< the caller's side: entries not yet handed over
  std::size_t pending_count_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string writing_;        ///< the writer's side: non-empty while it writes (guarded by mutex_)
  std::uint64_t handed_ = 0;   ///< batches handed over (guarded by mutex_)
  std::uint64_t written_ = 0;  ///< batches on disk or failed (guarded by mutex_)
  std::string error_;          ///< the first failure, thrown on the caller's side (guarded by mutex_)
  bool stop_ = false;
  std::thread writer_;
};

/// The first line of a journal: experiment seed, and per application name, kernel and
/// task count. A journal from another experiment is refused on resume.
std::string journal_fingerprint(std::uint64_t seed, const std::vector<std::string>& app_names,
                                const std::vector<std::string>& kernels, const std::vector<std::uint64_t>& tasks);

/// Reads a journal. Returns its entries, each task once (later copies dropped; a
/// revocation line drops the entry before it, so a later entry for that task counts). A last
/// line without its newline (torn by a crash) is ignored. `tasks[k]` bounds indices.
/// @throws std::runtime_error naming file, line and field for a bad line, and when the
///         fingerprint differs from `fingerprint`.
std::vector<JournalEntry> load_journal(const std::filesystem::path& path, const std::string& fingerprint,
                                       const std::vector<std::uint64_t>& tasks);

/// Reads a journal as it grows (a run's own, while the run goes): each read() parses only
/// the whole lines appended since the last one, so watching a run costs what it writes,
/// not the journal's size on every look. The same rules as load_journal.
class JournalReader {
 public:
  JournalReader(std::filesystem::path path, std::string fingerprint, std::vector<std::uint64_t> tasks);
  /// Parses what was appended (a line still without its newline waits for the next call)
  /// and returns every entry so far. @throws std::runtime_error as load_journal does (a
  /// missing file included); the lines before the bad one stay read.
  const std::vector<JournalEntry>& read();
  /// Bytes of the file seen so far, a torn last line included (0: an empty file).
  std::uint64_t bytes_seen() const { return seen_bytes_; }

 private:
  std::filesystem::path path_;
  std::string fingerprint_;
  std::vector<std::uint64_t> tasks_;
  std::vector<std::vector<bool>> done_;
  std::vector<JournalEntry> out_;
  std::uint64_t offset_ = 0;  ///< bytes of whole lines parsed
  std::uint64_t seen_bytes_ = 0;
  std::size_t line_no_ = 0;
  void parse(const std::string& line);
};

}  // namespace treefarm::metrics
