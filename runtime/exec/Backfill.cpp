#include "runtime/exec/Backfill.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace treefarm::exec {

namespace {

bool fits(const BackfillEntry& e, std::uint32_t free_cores, std::uint64_t free_memory,
          std::uint64_t total_memory) {
  return e.cores <= free_cores && (total_memory == 0 || e.memory <= free_memory);
}

}  // namespace

// lee2010 slide 14 (Backfill Balanced, Leinberger SC'99): minimise BM × FM with
// BM = max utilisation / average utilisation and FM = 1 - average utilisation, both over
// the resources {cores, memory} as they would be once the candidate runs.
double backfill_balanced_objective(const BackfillEntry& entry, const BackfillResources& r) {
  double u_cores = static_cast<double>(r.total_cores - r.free_cores + entry.cores) /
                   static_cast<double>(r.total_cores);
  double max_u = u_cores;
  double sum_u = u_cores;
  int n = 1;
  if (r.total_memory > 0) {
    double u_mem = static_cast<double>(r.total_memory - r.free_memory + entry.memory) /
                   static_cast<double>(r.total_memory);
    max_u = std::max(max_u, u_mem);
    sum_u += u_mem;
    ++n;
  }
  double mean_u = sum_u / n;
  double bm = max_u / mean_u;  // mean_u > 0: the candidate holds >= 1 core
  double fm = 1.0 - mean_u;
  return bm * fm;
}

Backfill::Backfill(bool backfill) : backfill_(backfill) {}

void Backfill::push(std::uint64_t id, std::uint32_t cores, std::uint64_t memory) {
  if (cores == 0) {
    throw std::invalid_argument("Backfill::push: task " + std::to_string(id) +
                                " needs 0 cores, expected >= 1");
  }
  queue_.push_back({id, cores, memory, 0});
}

void Backfill::push(const BackfillEntry& entry) {
  push(entry.id, entry.cores, entry.memory);
  queue_.back().bypass_count = entry.bypass_count;
}

BackfillEntry Backfill::remove(std::size_t index) {
  if (index >= queue_.size()) {
    throw std::out_of_range("Backfill::remove: index " + std::to_string(index) + " in a queue of " +
                            std::to_string(queue_.size()));
  }
  BackfillEntry e = queue_[index];
  queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(index));
  return e;
}

std::uint32_t Backfill::max_bypass_count() const {
  std::uint32_t m = 0;
  for (const auto& e : queue_) m = std::max(m, e.bypass_count);
  return m;
}

std::optional<std::size_t> Backfill::pick(std::uint32_t free_cores, std::uint64_t free_memory,
                                          std::uint32_t total_cores,
                                          std::uint64_t total_memory) const {
  if (queue_.empty()) return std::nullopt;
  if (fits(queue_.front(), free_cores, free_memory, total_memory)) return 0;
  if (!backfill_) return std::nullopt;

  // lee2010 slide 13: only a task whose BC >= max BC of the queue may be backfilled.
  const std::uint32_t max_bc = max_bypass_count();
  const BackfillResources res{free_cores, free_memory, total_cores, total_memory};
  std::optional<std::size_t> best;
  double best_objective = 0;
  for (std::size_t i = 1; i < queue_.size(); ++i) {
    const BackfillEntry& e = queue_[i];
    if (e.bypass_count < max_bc || !fits(e, free_cores, free_memory, total_memory)) continue;
    // lee2010 slide 14: among candidates, Backfill Balanced (min BM × FM).
    double objective = backfill_balanced_objective(e, res);
    if (!best || objective < best_objective - 1e-12) {
      best = i;
      best_objective = objective;
    }
  }
  return best;
}

BackfillEntry Backfill::take(std::size_t index) {
  if (index >= queue_.size()) {
    throw std::out_of_range("Backfill::take: index " + std::to_string(index) + " in a queue of " +
                            std::to_string(queue_.size()));
  }
  // lee2010 slide 13: BC "counts number of other jobs that have bypassed the job".
  for (std::size_t i = 0; i < index; ++i) ++queue_[i].bypass_count;
  BackfillEntry e = queue_[index];
  queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(index));
  return e;
}

std::optional<BackfillEntry> Backfill::start_next(std::uint32_t free_cores, std::uint64_t free_memory,
                                                  std::uint32_t total_cores,
                                                  std::uint64_t total_memory) {
  auto index = pick(free_cores, free_memory, total_cores, total_memory);
  if (!index) return std::nullopt;
  return take(*index);
}

}  // namespace treefarm::exec
