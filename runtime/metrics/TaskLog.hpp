#pragma once
/// @file TaskLog.hpp
/// The master's per-task records, kept on disk instead of in memory (at most 100
/// bytes of master memory per task). Each completed task is one fixed 48-byte record
/// appended to an unlinked spill file through a bounded buffer; memory holds one bit per
/// record (revoked or not) and the table of node names. results.json's task list is
/// streamed from it (Results.hpp, write_results_json).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace treefarm::metrics {

/// One completed task as the task log stores it: 48 bytes, no pointers.
struct PackedTaskRecord {
  std::uint64_t index = 0;           ///< Task index within its application.
  std::uint32_t app = 0;             ///< Application index in the experiment.
  std::uint32_t node = 0;            ///< Node that computed it (TaskLog::name).
  double completed_at = 0;           ///< seconds since the start of the run (master's clock)
  double compute_seconds = 0;        ///< seconds the kernel ran on that node
  double dispatched_at = -1;         ///< seconds since the start; negative if not recorded
  float queued_seconds = 0;          ///< seconds it waited in the node's executor queue
  std::uint32_t via = no_via;        ///< Child of the master it came through (TaskLog::name), or no_via.

  static constexpr std::uint32_t no_via = std::numeric_limits<std::uint32_t>::max();
};
static_assert(sizeof(PackedTaskRecord) == 48, "the task log's record is 48 bytes");

/// Append-only store of PackedTaskRecord in an anonymous file (removed when the log is
/// destroyed or the process dies). Not thread-safe: the master's loop thread owns it.
class TaskLog {
 public:
  /// Creates the spill file in `dir` (the run's output directory, or the system's temporary
  /// directory when empty). @throws std::runtime_error naming the directory when it cannot.
  explicit TaskLog(const std::filesystem::path& dir = {});
  ~TaskLog();
  TaskLog(const TaskLog&) = delete;
  TaskLog& operator=(const TaskLog&) = delete;

  /// The id of a node (or child) name in this log's name table, added if new.
  std::uint32_t intern(std::string_view name);
  /// The name of id `id` (from intern).
  const std::string& name(std::uint32_t id) const { return names_.at(id); }

  /// Appends a record. @throws std::runtime_error naming the spill file on a failed write.
  void add(const PackedTaskRecord& r);

  /// Revokes every live record that came through child `via` (its node was caught forging:
  /// the tasks are done again). Returns their (application, index) pairs.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> revoke_via(std::uint32_t via);
  /// Revokes every live record for which `pred` holds (e.g. those computed by a convicted
  /// node and its subtree, docs/security.md "Blame"). Returns their (application, index) pairs.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> revoke_if(const std::function<bool(const PackedTaskRecord&)>& pred);

  /// Calls `f` for every live (not revoked) record, in the order they were added.
  void for_each(const std::function<void(const PackedTaskRecord&)>& f) const;

  /// Live records.
  std::uint64_t size() const { return live_; }

  /// The last `count` records added (revoked ones too), oldest first: what the live
  /// dashboard's task stream shows (runtime/dashboard). Reads at most `count` records back
  /// from the spill file. @throws std::runtime_error naming the spill file on a failed read.
  std::vector<PackedTaskRecord> last(std::size_t count) const;

  /// Why the spill file stopped growing ("" = it did not): on a full disk the records are
  /// kept in memory instead, and the file is tried again every buffer_records records.
  const std::string& disk_full() const { return disk_full_; }

  /// Records per write to the spill file (the most the log keeps in memory unless the disk is full).
  static constexpr std::size_t buffer_records = 4096;

 private:
  void write_pending();
  /// Calls f(position, record) for every record, written or pending, revoked or not.
  void scan(const std::function<void(std::uint64_t, const PackedTaskRecord&)>& f) const;

  std::filesystem::path dir_;
  std::string disk_full_;  ///< disk_full()
  int fd_ = -1;
  std::uint64_t written_ = 0;                  ///< records in the file
  std::vector<PackedTaskRecord> pending_;      ///< records not yet written
  std::vector<bool> revoked_;                  ///< by position: 1 bit per record
  std::uint64_t live_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

}  // namespace treefarm::metrics
