#pragma once
/// @file FaultPlayer.hpp
/// Plays network faults (`[[fault]]` entries and `--fault` options) on an emulated
/// platform during a run: fault k starts `at` seconds after start() and ends `duration`
/// seconds later (LinkFaults.hpp says how each is made). stop() — also on an interrupted
/// or failed run, and the destructor — ends every fault still active and joins the thread,
/// so no rule or downed link outlives the run even before the namespaces are deleted.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/Fault.hpp"
#include "tools/emulate/Platform.hpp"

namespace treefarm::emulate {

class FaultPlayer {
 public:
  /// `faults` are checked against the experiment's tree (model::check_fault): throws
  /// PlatformError naming the fault (file:line or the option) otherwise.
  FaultPlayer(const model::Experiment& ex, std::vector<model::FaultSpec> faults, const Platform& platform,
              std::ostream& log);
  ~FaultPlayer();
  FaultPlayer(const FaultPlayer&) = delete;
  FaultPlayer& operator=(const FaultPlayer&) = delete;

  /// Starts the clock: fault times count from now.
  void start();
  /// Stops playing, ends every active fault, joins the thread. Idempotent.
  void stop();
  /// Faults started so far / ended so far (a started fault is ended by its end or stop()).
  std::size_t started() const;
  std::size_t ended() const;
  /// Problems met while applying or ending faults ("" = none).
  std::vector<std::string> problems() const;

 private:
  struct Step {
    double at = 0;        ///< seconds after start()
    std::size_t fault = 0;
    bool begin = true;    ///< start the fault, else end it
  };
  void run();
  void apply(std::size_t k, bool begin);

  const Platform& platform_;
  std::ostream& log_;
  std::vector<model::FaultSpec> faults_;
  std::vector<std::size_t> nodes_;  ///< by fault: the node whose parent link it hits
  std::vector<bool> active_;        ///< by fault
  std::vector<Step> steps_;         ///< sorted by time, an end before a start at the same time
  std::chrono::steady_clock::time_point t0_;
  std::thread thread_;
  mutable std::mutex mutex_;   ///< guards stopping_, active_, counts and problems_
  std::mutex apply_mutex_;     ///< one change to the links at a time
  std::condition_variable wake_;
  bool stopping_ = false;
  std::size_t started_ = 0, ended_ = 0;
  std::vector<std::string> problems_;
};

/// "node 'w1' loss 0.05 for 10 s from 5 s" — for logs.
std::string describe(const model::FaultSpec& fault);

}  // namespace treefarm::emulate
