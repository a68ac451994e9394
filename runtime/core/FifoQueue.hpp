#pragma once
/// @file FifoQueue.hpp
/// A first-in first-out queue that keeps its memory (no allocation per task on
/// the hot path). A std::deque frees a block when its front passes one and allocates one
/// when its back needs one: for the driver's events (variants of ~100 bytes, four or five
/// to libstdc++'s 512-byte block) that was an allocation every few events, the last
/// per-task allocation left on a worker. Here the entries live in one vector and the front
/// moves by an index: the vector is emptied, its capacity kept, whenever the queue is;
/// while it never empties (the deadlines of tasks in flight), the consumed front is
/// dropped once it is more than half of the vector, so memory stays within twice the
/// queue's largest length.

#include <cstddef>
#include <utility>
#include <vector>

namespace treefarm::core {

template <typename T>
class FifoQueue {
 public:
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  void push_back(T value) { items_.push_back(std::move(value)); }
  /// The oldest entry; the queue must not be empty.
  const T& front() const { return items_[head_]; }
  /// The newest entry; the queue must not be empty.
  const T& back() const { return items_.back(); }
  /// Removes the oldest entry and returns it; the queue must not be empty.
  T take_front() {
    T value = std::move(items_[head_]);
    pop_front();
    return value;
  }
  /// Removes the oldest entry; the queue must not be empty.
  void pop_front() {
    if (++head_ == items_.size()) {
      clear();
    } else if (head_ >= compact_after && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  /// Consumed entries kept before a compaction is considered (amortises its moves).
  static constexpr std::size_t compact_after = 1024;
  std::vector<T> items_;
  std::size_t head_ = 0;  ///< index of the front in items_
};

}  // namespace treefarm::core
