#pragma once
/// @file BlameLedger.hpp
/// What a node remembers to answer a Blame (docs/security.md, "Blame below an
/// inner node"): which child sent each result it passed up (or that it computed the result
/// itself), and the Blames it passed down and waits to hear about.
///
/// Why the master needs it: only the master can check a result (inner nodes lack the
/// run's secret inputs), and it knows only the child a result came through. When a spot
/// check proves a result forged, the master sends a Blame down that child; each inner
/// node looks the task up here, drops the leaf child that sent it (or passes the Blame on
/// to an inner child and waits), and answers a BlameReply naming the convicted node.
///
/// Memory is bounded: the record of forwarded results is a ring of `capacity` entries of
/// 16 bytes (4 MiB at the default 2^18), grown on use by blocks of 64 KiB that are never
/// moved: a growing vector copied the whole record at each doubling, into fresh pages,
/// on the path of every result (docs/benchmarks.md, "Headline figures"). The bound is safe against a forger
/// who waits: the master checks a result the moment it arrives, so a record is needed
/// only from when this node passes the result up until the Blame comes back down — one
/// round trip between this node and the master, not the forger's choice of time. In that
/// window the ring is overwritten only by results this node forwards, and a child can
/// send a result only for a task it holds (at most its buffer): no child can flood it.
/// A record overwritten anyway (more than `capacity` results forwarded within one round
/// trip) makes this node answer "no longer known", and its parent then convicts it — the
/// conservative fall-back (docs/security.md).
///
/// Pure: no clock, times passed in (seconds on the driver's clock).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace treefarm::node {

class BlameLedger {
 public:
  /// Who a result came from: a child's core id (core::ChildId::value), or `local`.
  static constexpr std::uint32_t local = 0xFFFFFFFFu;
  /// Forwarded results remembered by default (16 bytes each).
  static constexpr std::size_t default_capacity = std::size_t{1} << 18;
  /// Blames waiting for a child's answer at once; more are answered "unknown" at once.
  static constexpr std::size_t max_pending = 1024;

  /// A Blame passed down to child `child`, waiting for its BlameReply until `deadline`.
  struct Pending {
    std::uint64_t task_id = 0;
    std::uint32_t child = 0;
    double deadline = 0;   ///< seconds (driver clock)
  };

  /// @throws std::invalid_argument if `capacity` is 0.
  explicit BlameLedger(std::size_t capacity = default_capacity);

  /// The result of task `task_id` arrived from `from` (a child's core id, or `local`).
  void record(std::uint64_t task_id, std::uint32_t from);
  /// The newest record of `task_id` was not passed up after all (a re-issued task's late
  /// copy, dropped as a duplicate): forget it.
  void retract(std::uint64_t task_id);
  /// Who sent the newest result of `task_id`; nullopt once overwritten (or never seen).
  std::optional<std::uint32_t> who_sent(std::uint64_t task_id) const;

  /// Remembers a Blame passed down to `child`. False (nothing remembered) when max_pending
  /// Blames wait already, or one for that task does.
  bool expect(std::uint64_t task_id, std::uint32_t child, double deadline);
  /// Child `child` answered the Blame of `task_id`: the pending entry, removed; nullopt if
  /// no such Blame was sent to that child (an unasked answer).
  std::optional<Pending> answered(std::uint64_t task_id, std::uint32_t child);
  /// Removes and returns the Blames whose deadline has passed at `now`.
  std::vector<Pending> expired(double now);
  /// Removes and returns the Blames waiting on `child` (it left: it answers no more).
  std::vector<Pending> forget_child(std::uint32_t child);
  /// Earliest deadline of a waiting Blame (seconds), nullopt if none waits.
  std::optional<double> next_deadline() const;

  /// Forgets everything (the node lost its parent and starts afresh).
  void clear();

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    std::uint64_t task_id = 0;
    std::uint32_t from = 0;
    std::uint32_t live = 0;   ///< 0 once retracted
  };
  static_assert(sizeof(Entry) == 16);
  /// Entries per block (64 KiB).
  static constexpr std::size_t block_entries = 4096;
  template <class Pred>
  std::vector<Pending> take_if(Pred pred);
  Entry& at(std::size_t i) { return blocks_[i / block_entries][i % block_entries]; }
  const Entry& at(std::size_t i) const { return blocks_[i / block_entries][i % block_entries]; }
  /// Calls f(entry) on the ring's entries newest first until it returns true.
  template <class Self, class F>
  static void newest_first(Self& self, F f);

  std::size_t capacity_;
  std::vector<std::unique_ptr<Entry[]>> blocks_;  ///< the ring: grows to capacity_, then wraps
  std::size_t size_ = 0;      ///< entries written (at most capacity_)
  std::size_t next_ = 0;      ///< where the next record goes once full
  std::vector<Pending> pending_;
};

}  // namespace treefarm::node
