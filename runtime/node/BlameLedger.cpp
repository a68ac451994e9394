#include "runtime/node/BlameLedger.hpp"

#include <algorithm>
#include <stdexcept>

namespace treefarm::node {

BlameLedger::BlameLedger(std::size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw std::invalid_argument("a blame ledger needs room for at least one record");
}

void BlameLedger::record(std::uint64_t task_id, std::uint32_t from) {
  const Entry e{task_id, from, 1};
  if (size_ < capacity_) {
    if (size_ % block_entries == 0)  // a new block, never moved (sized to the capacity's end)
      blocks_.push_back(std::make_unique_for_overwrite<Entry[]>(std::min(block_entries, capacity_ - size_)));
    at(size_++) = e;
    return;
  }
  at(next_) = e;
  next_ = (next_ + 1) % capacity_;
}

template <class Self, class F>
void BlameLedger::newest_first(Self& self, F f) {
  const std::size_t n = self.size_;
  // Newest is just before `next` once the ring has wrapped, else the last written.
  const std::size_t newest = n < self.capacity_ ? n - 1 : (self.next_ + self.capacity_ - 1) % self.capacity_;
  for (std::size_t i = 0; i < n; ++i)
    if (f(self.at((newest + n - i) % n))) return;
}

void BlameLedger::retract(std::uint64_t task_id) {
  if (size_ == 0) return;
  newest_first(*this, [&](Entry& e) {
    if (e.task_id != task_id || !e.live) return false;
    e.live = 0;
    return true;
  });
}

std::optional<std::uint32_t> BlameLedger::who_sent(std::uint64_t task_id) const {
  std::optional<std::uint32_t> found;
  if (size_ == 0) return found;
  // A linear scan: Blames are rare (one per forgery caught), records are written per result.
  newest_first(*this, [&](const Entry& e) {
    if (e.task_id != task_id || !e.live) return false;
    found = e.from;
    return true;
  });
  return found;
}

bool BlameLedger::expect(std::uint64_t task_id, std::uint32_t child, double deadline) {
  if (pending_.size() >= max_pending) return false;
  if (std::any_of(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.task_id == task_id; })) return false;
  pending_.push_back(Pending{task_id, child, deadline});
  return true;
}

template <class Pred>
std::vector<BlameLedger::Pending> BlameLedger::take_if(Pred pred) {
  std::vector<Pending> out;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (pred(*it)) {
      out.push_back(*it);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::optional<BlameLedger::Pending> BlameLedger::answered(std::uint64_t task_id, std::uint32_t child) {
  auto taken = take_if([&](const Pending& p) { return p.task_id == task_id && p.child == child; });
  if (taken.empty()) return std::nullopt;
  return taken.front();
}

std::vector<BlameLedger::Pending> BlameLedger::expired(double now) {
  return take_if([&](const Pending& p) { return now >= p.deadline; });
}

std::vector<BlameLedger::Pending> BlameLedger::forget_child(std::uint32_t child) {
  return take_if([&](const Pending& p) { return p.child == child; });
}

std::optional<double> BlameLedger::next_deadline() const {
  std::optional<double> t;
  for (const auto& p : pending_)
    if (!t || p.deadline < *t) t = p.deadline;
  return t;
}

void BlameLedger::clear() {
  blocks_.clear();
  size_ = 0;
  next_ = 0;
  pending_.clear();
}

}  // namespace treefarm::node
