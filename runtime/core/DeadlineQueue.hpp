#pragma once
/// @file DeadlineQueue.hpp
/// Task deadlines by time, earliest first (NodeScheduler, task deadlines). Measured: a
/// std::set cost a tree node and a rebalancing per task, a binary heap ~5 % of the
/// master's loop in sift-downs. Deadlines are armed in time order and mostly with the
/// same delay, so nearly every one is at least the last one armed: those go to a FIFO
/// (O(1) each way); the few that come earlier go to a heap. The earliest is the smaller
/// of the two fronts. The order is exactly that of (deadline, task) pairs, as a set's.
/// Removal is the caller's (lazy): it pops entries it finds stale.

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "runtime/core/FifoQueue.hpp"
#include "runtime/core/Ids.hpp"

namespace treefarm::core {

class DeadlineQueue {
 public:
  using Entry = std::pair<Seconds, TaskId>;

  void push(Seconds deadline, TaskId task) {
    const Entry e{deadline, task};
    if (fifo_.empty() || !(e < fifo_.back())) {
      fifo_.push_back(e);
    } else {
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
    }
  }
  bool empty() const { return fifo_.empty() && heap_.empty(); }
  std::size_t size() const { return fifo_.size() + heap_.size(); }
  /// The earliest entry; the queue must not be empty.
  const Entry& top() const { return from_heap() ? heap_.front() : fifo_.front(); }
  void pop() {
    if (from_heap()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
      heap_.pop_back();
    } else {
      fifo_.pop_front();
    }
  }
  void clear() {
    fifo_.clear();
    heap_.clear();
  }

 private:
  bool from_heap() const { return fifo_.empty() || (!heap_.empty() && heap_.front() < fifo_.front()); }
  FifoQueue<Entry> fifo_;    ///< non-decreasing (keeps its memory: no allocation per task)
  std::vector<Entry> heap_;  ///< a min-heap of those that came earlier than the FIFO's back
};

}  // namespace treefarm::core
