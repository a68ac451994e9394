#include "master/EtaModel.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "runtime/metrics/Progress.hpp"

namespace treefarm::master {

void EtaModel::completed(const std::string& node, double seconds, std::uint32_t cores_per_task) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  auto& n = nodes_[node];
  const double c = seconds * static_cast<double>(cores_per_task == 0 ? 1 : cores_per_task);
  if (n.core_seconds.size() < recent_tasks) n.core_seconds.push_back(c);
  else n.core_seconds[n.tasks % recent_tasks] = c;
  ++n.tasks;
}

double EtaModel::Node::median() const {
  auto v = core_seconds;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

std::optional<EtaModel::Eta> EtaModel::eta(std::uint64_t done) const {
  double rate = 0;
  for (const auto& [name, n] : nodes_)
    if (n.tasks > 0 && n.cores > 0)
      if (const double m = n.median(); m > 0) rate += static_cast<double>(n.cores) / m;
  if (plan_rate_ > 0) rate = std::min(rate, plan_rate_);
  if (achieved_rate_ > 0) rate = std::min(rate, achieved_rate_);
  if (!(rate > 0)) return std::nullopt;
  Eta e;
  e.remaining = total_ - std::min(total_, done);
  e.rate = rate;
  e.seconds_left = static_cast<double>(e.remaining) / rate;
  return e;
}

void EtaModel::observe(double elapsed, std::uint64_t done) {
  if (done > 0 && !first_done_) first_done_.emplace(elapsed, done);
  if (first_done_ && elapsed - first_done_->first >= 1.0 && done > first_done_->second)
    achieved_rate_ = static_cast<double>(done - first_done_->second) / (elapsed - first_done_->first);
  // Only an early prediction is worth setting against the end: none past half the tasks, and
  // none before the rate achieved is known.
  if (kept_ || total_ == 0 || done * 10 < total_ || done * 2 > total_ || achieved_rate_ <= 0) return;
  if (const auto e = eta(done)) {
    kept_.emplace(elapsed, *e);
    kept_done_ = done;
  }
}

nlohmann::json EtaModel::versus_actual(double actual_end) const {
  if (!kept_) return nullptr;
  const double predicted_end = kept_->first + kept_->second.seconds_left;
  return {{"fraction_done", static_cast<double>(kept_done_) / static_cast<double>(total_)},
          {"made_at", kept_->first},
          {"rate", kept_->second.rate},
          {"predicted_end", predicted_end},
          {"actual_end", actual_end},
          {"ratio", actual_end > 0 ? predicted_end / actual_end : 0.0}};
}

std::string EtaModel::text(const Eta& eta) {
  const std::string digits = std::to_string(eta.remaining);
  std::string count;  // thousands separated by commas
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) count += ',';
    count += digits[i];
  }
  return fmt::format("{} tasks, {} left at {:.2f} tasks/s predicted", count,
                     metrics::Progress::format_duration(eta.seconds_left), eta.rate);
}

}  // namespace treefarm::master
