#include "tools/emulate/FaultPlayer.hpp"

#include <algorithm>
#include <sstream>

#include "tools/emulate/LinkFaults.hpp"

namespace treefarm::emulate {

std::string describe(const model::FaultSpec& f) {
  std::ostringstream out;
  out << "node '" << f.node << "' " << model::to_string(f.kind);
  if (f.kind == model::FaultKind::loss) out << " " << f.loss;
  out << " for " << f.duration << " s from " << f.at << " s (" << f.where << ")";
  return out.str();
}

FaultPlayer::FaultPlayer(const model::Experiment& ex, std::vector<model::FaultSpec> faults, const Platform& platform,
                         std::ostream& log)
    : platform_(platform), log_(log), faults_(std::move(faults)) {
  std::vector<model::FaultSpec> earlier;
  for (const auto& f : faults_) {
    if (const auto problem = model::check_fault(f, earlier, ex))
      throw PlatformError(f.where + ": field '" + problem->key + "': " + problem->message);
    earlier.push_back(f);
    nodes_.push_back(*ex.node_index(f.node));
  }
  active_.assign(faults_.size(), false);
  for (std::size_t k = 0; k < faults_.size(); ++k) {
    steps_.push_back({faults_[k].at, k, true});
    steps_.push_back({faults_[k].at + faults_[k].duration, k, false});
  }
  std::stable_sort(steps_.begin(), steps_.end(), [](const Step& a, const Step& b) {
    return a.at < b.at || (a.at == b.at && !a.begin && b.begin);
  });
}

FaultPlayer::~FaultPlayer() { stop(); }

void FaultPlayer::start() {
  if (steps_.empty() || thread_.joinable()) return;
  t0_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
}

void FaultPlayer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (std::size_t k = 0; k < faults_.size(); ++k) {
    bool was_active = false;
    {
      std::lock_guard lock(mutex_);
      was_active = active_[k];
    }
    if (was_active) apply(k, false);
  }
}

std::size_t FaultPlayer::started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

std::size_t FaultPlayer::ended() const {
  std::lock_guard lock(mutex_);
  return ended_;
}

std::vector<std::string> FaultPlayer::problems() const {
  std::lock_guard lock(mutex_);
  return problems_;
}

void FaultPlayer::apply(std::size_t k, bool begin) {
  std::lock_guard changing(apply_mutex_);
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  try {
    if (begin)
      apply_fault(platform_, nodes_[k], faults_[k], k);
    else
      revert_fault(platform_, nodes_[k], faults_[k], k);
    std::lock_guard lock(mutex_);
    active_[k] = begin;
    ++(begin ? started_ : ended_);
    log_ << "treefarm emulate: t=" << t << " s: fault " << (begin ? "started" : "ended") << ": " << describe(faults_[k])
         << "\n";
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    problems_.push_back(std::string("fault ") + (begin ? "start" : "end") + " failed: " + describe(faults_[k]) + ": " +
                        e.what());
    log_ << "treefarm emulate: " << problems_.back() << "\n";
  }
}

void FaultPlayer::run() {
  for (const Step& s : steps_) {
    {
      std::unique_lock lock(mutex_);
      const auto due = t0_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s.at));
      if (wake_.wait_until(lock, due, [this] { return stopping_; })) return;
      if (!s.begin && !active_[s.fault]) continue;  // its start failed
    }
    apply(s.fault, s.begin);
  }
}

}  // namespace treefarm::emulate
