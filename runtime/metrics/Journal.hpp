#pragma once
/// @file Journal.hpp
/// The master's journal (issue 13, hole 8): every verified result appended to
/// OUT/journal.tsv in fsync'd batches, so that a master killed with -9 loses at most one
/// batch, and `--resume` redoes only what the journal lacks. Format: docs/fault-tolerance.md.

#include <cstdint>
#include <filesystem>
#include <string>
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

/// Appends entries to a journal file; flush() writes the pending batch and fsyncs it.
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

  /// Queues an entry; writes and fsyncs the batch once it holds `batch_size` entries.
  void add(const JournalEntry& e);
  /// Queues a revocation: the entry of task `index` of application `app` no longer counts
  /// (its node was caught forging results; the task is done again). Line "-<TAB>app<TAB>index".
  void revoke(std::uint32_t app, std::uint64_t index);
  /// Writes and fsyncs the pending entries (no-op when none).
  /// @throws std::runtime_error naming the path on a failed write or fsync.
  void flush();
  const std::filesystem::path& path() const { return path_; }

  /// Entries per fsync'd batch (the most a kill -9 loses, besides the last second).
  static constexpr std::size_t batch_size = 4096;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::string pending_;
  std::size_t pending_count_ = 0;
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

}  // namespace treefarm::metrics
