#pragma once
/// @file Backfill.hpp
/// The queue discipline of the executor: which waiting task starts next on a node whose
/// cores and memory are partly held by running tasks. Pure and deterministic: no
/// threads, no clock; the Executor (and the tests) call it with the free resources.
///
/// Rules (papers/lee2010-decentralized-dynamic-scheduling-multicore-grids-slides.txt):
/// - The head of the queue starts if it fits.
/// - Otherwise a later task that fits may start ("backfilling with multiple resource
///   requirements", slide 13), but only if its Backfilling Counter BC (the number of
///   tasks that have bypassed it) is >= the maximum BC in the queue (slide 13: "Only a job
///   whose BC is equal to or greater than maximum BC of jobs in the queue can be
///   backfilled" — this is what makes starvation impossible).
/// - Among several such tasks, Backfill Balanced picks the one minimising BM × FM
///   (slide 14, after Leinberger SC'99); see backfill_balanced_objective().
/// - The chosen task increments the BC of every queued task ahead of it.
/// With backfilling off the queue is strict FIFO: only the head may start.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

namespace treefarm::exec {

/// A waiting task, as the queue discipline sees it.
struct BackfillEntry {
  std::uint64_t id = 0;            ///< Opaque to Backfill.
  std::uint32_t cores = 1;         ///< Cores it needs (>= 1).
  std::uint64_t memory = 0;        ///< bytes it needs (ignored when total memory is 0).
  std::uint32_t bypass_count = 0;  ///< BC of slide 13: tasks that started ahead of it.
};

/// Free and total resources of the node at a decision.
struct BackfillResources {
  std::uint32_t free_cores = 0;
  std::uint64_t free_memory = 0;   ///< bytes
  std::uint32_t total_cores = 0;
  std::uint64_t total_memory = 0;  ///< bytes; 0 means memory is not accounted.
};

/// Backfill Balanced objective of starting `entry` now (slide 14); smaller is better.
/// Our reading of the slide: the resources are cores and (when total_memory > 0)
/// memory. For each resource r, u_r = (total_r - free_r + need_r) / total_r is its
/// utilisation *after* the candidate starts. BM = max_r u_r / mean_r u_r ("maximum
/// utilization / average utilization": 1 when balanced, larger when uneven), FM = 1 -
/// mean_r u_r ("1 - average utilization": 0 when full). The objective is BM × FM: it
/// prefers the candidate that leaves the node both fuller and more evenly used.
/// Precondition: the entry fits and total_cores > 0.
double backfill_balanced_objective(const BackfillEntry& entry, const BackfillResources& resources);

/// FIFO queue with backfilling counters; see the file comment for the rules.
class Backfill {
 public:
  /// backfill = false: strict FIFO (nothing ever overtakes the head).
  explicit Backfill(bool backfill = true);

  /// Appends a task with BC 0. Throws std::invalid_argument if cores == 0.
  void push(std::uint64_t id, std::uint32_t cores, std::uint64_t memory);

  /// Appends a task that keeps its BC (a task migrated from another node: lee2010 slide
  /// 15, the Node Backfilling Counter rule compares it with this queue's max BC).
  /// Throws std::invalid_argument if entry.cores == 0.
  void push(const BackfillEntry& entry);

  /// Removes entries()[index] *without* counting a bypass (the task leaves this node:
  /// migration, slides 15–17). Throws std::out_of_range for a bad index.
  BackfillEntry remove(std::size_t index);

  /// Index in entries() of the task to start next with these free resources, or nullopt
  /// if none may start. Does not change the queue: call take() to start it.
  /// Ties in the Backfill Balanced objective go to the task nearer the head.
  std::optional<std::size_t> pick(std::uint32_t free_cores, std::uint64_t free_memory,
                                  std::uint32_t total_cores, std::uint64_t total_memory) const;

  /// Removes entries()[index] and increments the BC of every task ahead of it (they
  /// were bypassed). Returns the removed entry (with its BC at the time it started).
  /// Throws std::out_of_range for a bad index.
  BackfillEntry take(std::size_t index);

  /// pick() then take(): the started task, or nullopt.
  std::optional<BackfillEntry> start_next(std::uint32_t free_cores, std::uint64_t free_memory,
                                          std::uint32_t total_cores, std::uint64_t total_memory);

  /// Waiting tasks, head first.
  const std::deque<BackfillEntry>& entries() const { return queue_; }
  std::size_t size() const { return queue_.size(); }
  bool empty() const { return queue_.empty(); }
  bool backfill() const { return backfill_; }
  /// Largest BC in the queue (0 when empty).
  std::uint32_t max_bypass_count() const;

 private:
  bool backfill_;
  std::deque<BackfillEntry> queue_;
};

}  // namespace treefarm::exec
