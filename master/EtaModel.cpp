#include "master/EtaModel.hpp"

#include <cmath>

#include <fmt/format.h>

#include "runtime/metrics/Progress.hpp"

namespace treefarm::master {

void EtaModel::completed(const std::string& node, double seconds, std::uint32_t cores_per_task) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  auto& n = nodes_[node];
  n.core_seconds += seconds * static_cast<double>(cores_per_task == 0 ? 1 : cores_per_task);
  ++n.tasks;
}

std::optional<EtaModel::Eta> EtaModel::eta(std::uint64_t done) const {
  double rate = 0;
  for (const auto& [name, n] : nodes_)
    if (n.tasks > 0 && n.cores > 0 && n.core_seconds > 0)
      rate += static_cast<double>(n.cores) / (n.core_seconds / static_cast<double>(n.tasks));
  if (!(rate > 0)) return std::nullopt;
  Eta e;
  e.remaining = total_ - std::min(total_, done);
  e.rate = rate;
  e.seconds_left = static_cast<double>(e.remaining) / rate;
  return e;
}

void EtaModel::observe(double elapsed, std::uint64_t done) {
  if (kept_ || total_ == 0 || done * 10 < total_ || done >= total_) return;
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
