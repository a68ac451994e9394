#include "runtime/metrics/Progress.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace treefarm::metrics {

Progress::Progress(std::vector<App> apps, Mode mode, std::ostream& out)
    : apps_(std::move(apps)), mode_(mode), out_(out), last_(apps_.size(), 0), rates_(apps_.size(), 0.0) {}

double Progress::eta(std::size_t k) const {
  const std::uint64_t left = apps_[k].tasks - std::min(apps_[k].tasks, last_[k]);
  if (left == 0) return 0;
  return rates_[k] > 0 ? static_cast<double>(left) / rates_[k] : -1;
}

std::string Progress::format_duration(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

std::string Progress::bar_line(std::size_t k, int width) const {
  const auto& app = apps_[k];
  const double fraction = app.tasks ? static_cast<double>(last_[k]) / static_cast<double>(app.tasks) : 1.0;
  const int filled = static_cast<int>(std::floor(fraction * width));
  std::string bar(static_cast<std::size_t>(std::clamp(filled, 0, width)), '#');
  bar.resize(static_cast<std::size_t>(width), '.');
  return fmt::format("{:<12} [{}] {:5.1f}%  {}/{}  {:.1f}/s  ETA {}", app.name, bar, 100 * fraction, last_[k],
                     app.tasks, rates_[k], format_duration(eta(k)));
}

void Progress::tick(double elapsed, const std::vector<std::uint64_t>& completed) {
  const double dt = std::max(1e-9, elapsed - last_elapsed_);
  for (std::size_t k = 0; k < apps_.size() && k < completed.size(); ++k) {
    const double instant = static_cast<double>(completed[k] - std::min(completed[k], last_[k])) / dt;
    rates_[k] = ticks_ == 0 ? instant : 0.3 * instant + 0.7 * rates_[k];
    last_[k] = completed[k];
  }
  last_elapsed_ = elapsed;
  ++ticks_;
  std::uint64_t done = 0, total = 0;
  for (std::size_t k = 0; k < apps_.size(); ++k) {
    done += last_[k];
    total += apps_[k].tasks;
  }
  switch (mode_) {
    case Mode::off:
      return;
    case Mode::plain: {
      std::string line = fmt::format("[{} s] {}/{}", static_cast<long long>(elapsed), done, total);
      for (std::size_t k = 0; k < apps_.size(); ++k)
        line += fmt::format("  {} {}/{} {:.0f}% ({:.1f}/s, ETA {})", apps_[k].name, last_[k], apps_[k].tasks,
                            apps_[k].tasks ? 100.0 * static_cast<double>(last_[k]) / static_cast<double>(apps_[k].tasks) : 100.0,
                            rates_[k], format_duration(eta(k)));
      if (prediction_) line += "; " + prediction_->text;
      out_ << line << "\n" << std::flush;
      return;
    }
    case Mode::bar: {
      // Redraw the block in place: cursor up over the previous block, clear each line.
      if (drawn_) out_ << "\x1b[" << drawn_lines_ << "A";
      out_ << "\x1b[2K" << fmt::format("{} s elapsed, {}/{} tasks", static_cast<long long>(elapsed), done, total) << "\n";
      for (std::size_t k = 0; k < apps_.size(); ++k) out_ << "\x1b[2K" << bar_line(k) << "\n";
      if (prediction_) out_ << "\x1b[2K" << prediction_->text << "\n";
      out_ << std::flush;
      drawn_ = true;
      drawn_lines_ = apps_.size() + 1 + (prediction_ ? 1 : 0);
      return;
    }
    case Mode::json: {
      nlohmann::json j{{"type", "progress"}, {"elapsed", elapsed}, {"completed", done}, {"tasks", total}};
      j["apps"] = nlohmann::json::array();
      for (std::size_t k = 0; k < apps_.size(); ++k) {
        const double e = eta(k);
        j["apps"].push_back({{"name", apps_[k].name},
                             {"completed", last_[k]},
                             {"tasks", apps_[k].tasks},
                             {"percent", apps_[k].tasks ? 100.0 * static_cast<double>(last_[k]) /
                                                              static_cast<double>(apps_[k].tasks)
                                                        : 100.0},
                             {"rate", rates_[k]},
                             {"eta_seconds", e >= 0 ? nlohmann::json(e) : nlohmann::json(nullptr)}});
      }
      if (prediction_)
        j["predicted"] = {{"remaining", prediction_->remaining}, {"rate", prediction_->rate},
                          {"seconds_left", prediction_->seconds_left}};
      out_ << j.dump() << "\n" << std::flush;
      return;
    }
  }
}

}  // namespace treefarm::metrics
