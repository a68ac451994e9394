#include "tools/emulate/EventPlayer.hpp"

#include <chrono>
#include <sstream>

namespace treefarm::emulate {

EventPlayer::EventPlayer(const model::Experiment& ex, const Platform& platform, std::ostream& log)
    : platform_(platform), log_(log) {
  for (const auto& e : ex.events) {
    const auto i = ex.node_index(e.node);
    const std::string where = ex.path + ":" + std::to_string(e.line) + ": [[event]] at " + std::to_string(e.at) + " s: ";
    if (!i) throw PlatformError(where + "no node called '" + e.node + "'");
    const auto& spec = ex.nodes[*i];
    Change c;
    c.at = e.at;
    c.node = *i;
    std::ostringstream what;
    what << "node '" << e.node << "' " << model::to_string(e.kind) << " " << e.value << " (line " << e.line << ")";
    c.what = what.str();
    switch (e.kind) {
      case model::EventKind::cpu_quota:
      case model::EventKind::speed:
        if (!spec.cpu_quota || platform.cgroups(*i).empty())
          throw PlatformError(where + "node '" + e.node +
                              "' has no cpu_quota: give it one in its [[node]] so that its quota can change");
        if (e.kind == model::EventKind::speed && !spec.speed)
          throw PlatformError(where + "node '" + e.node + "' has no speed to scale; use cpu_quota");
        c.quota = true;
        c.value = e.kind == model::EventKind::cpu_quota ? e.value : *spec.cpu_quota * e.value / *spec.speed;
        break;
      case model::EventKind::bandwidth:
        if (!platform.shape(*i))
          throw PlatformError(where + "the link to '" + e.node +
                              "' is not shaped: give the node a bandwidth so that its rate can change");
        c.quota = false;
        c.value = e.value;
        break;
    }
    changes_.push_back(std::move(c));
  }
}

EventPlayer::~EventPlayer() { stop(); }

void EventPlayer::start() {
  if (changes_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void EventPlayer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::size_t EventPlayer::applied() const {
  std::lock_guard lock(mutex_);
  return applied_;
}

void EventPlayer::run() {
  const auto t0 = std::chrono::steady_clock::now();
  for (const Change& c : changes_) {  // sorted by time (the experiment parser sorts them)
    std::unique_lock lock(mutex_);
    const auto due = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(c.at));
    if (wake_.wait_until(lock, due, [this] { return stopping_; })) return;
    lock.unlock();
    try {
      if (c.quota)
        platform_.set_cpu_quota(c.node, c.value);
      else
        platform_.set_bandwidth(c.node, c.value);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      log_ << "treefarm emulate: t=" << t << " s: " << c.what << " applied\n";
      lock.lock();
      ++applied_;
    } catch (const std::exception& e) {
      log_ << "treefarm emulate: " << c.what << " failed: " << e.what() << "\n";
    }
  }
}

}  // namespace treefarm::emulate
