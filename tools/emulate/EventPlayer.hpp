#pragma once
/// @file EventPlayer.hpp
/// Plays an experiment's `[[event]]` table on an emulated platform during a run
/// (docs/migration.md): at `at` seconds after start(), node `node`'s CPU quota
/// (its cgroup) or the rate of the link from its parent (tc tbf, both directions)
/// changes. A `speed` event is applied as a quota: new speed / initial speed times the
/// node's initial cpu_quota. One thread, stopped (and joined) by stop() or the destructor.

#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "tools/emulate/Platform.hpp"

namespace treefarm::emulate {

class EventPlayer {
 public:
  /// Checks every event against the platform first: throws PlatformError naming the event
  /// (file:line) when a node has no quota group or no shaped link to change.
  EventPlayer(const model::Experiment& ex, const Platform& platform, std::ostream& log);
  ~EventPlayer();
  EventPlayer(const EventPlayer&) = delete;
  EventPlayer& operator=(const EventPlayer&) = delete;

  /// Starts the clock: event times count from now.
  void start();
  /// Stops playing (events not yet due are skipped) and joins the thread.
  void stop();
  /// Events applied so far.
  std::size_t applied() const;

 private:
  struct Change {
    double at = 0;        ///< seconds after start()
    std::size_t node = 0;
    bool quota = true;    ///< cgroup quota (cores' worth), else link rate (bytes/s)
    double value = 0;
    std::string what;     ///< for the log: "node 'w1' cpu_quota 0.25 (line 30)"
  };
  void run();

  const Platform& platform_;
  std::ostream& log_;
  std::vector<Change> changes_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::size_t applied_ = 0;
};

}  // namespace treefarm::emulate
