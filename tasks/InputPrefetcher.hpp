#pragma once
/// @file InputPrefetcher.hpp
/// The master's task inputs, generated ahead of need on a thread of their own.
///
/// Every task the master sends carries an input generated from the run secret (see
/// docs/security.md "Results a worker cannot forge"): 2·n² doubles per matrix task, 4 MiB
/// for the quickstart's matadd. Generated on the loop thread when the task is sent, that
/// work stalled dispatch: on a 2-core machine with four workers the master spent 66 s of a
/// 77 s quickstart inside it and the fair throughput fell from ~100 to 65 tasks/s. The
/// prefetcher generates the next inputs of each application (tasks are drawn in index
/// order, NodeScheduler::pump) on a background thread into recycled buffers (no page
/// faults or zero-fill per task), so the loop thread only takes a ready buffer. Small
/// inputs (below `min_prefetch_bytes`) are generated on the caller: a hand-off between
/// threads would cost more than the few microseconds of filling them.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "runtime/model/Application.hpp"
#include "tasks/Payload.hpp"

namespace treefarm::tasks {

class InputPrefetcher {
 public:
  /// Seed of the input of task `index` of application `app` (RunSecret::input_seed).
  using SeedOf = std::function<std::uint64_t(std::uint32_t app, std::uint64_t index)>;

  struct Options {
    std::size_t budget_bytes = std::size_t{64} << 20;     ///< bytes of inputs kept ready (as much again recycled)
    std::size_t min_prefetch_bytes = std::size_t{64} << 10;  ///< smaller inputs: generated on the caller
    std::size_t max_ahead = 32;                            ///< inputs ready per application, at most
  };

  /// What the prefetcher did (for the master's log).
  struct Stats {
    std::uint64_t ready = 0;      ///< inputs found generated ahead
    std::uint64_t generated_on_caller = 0;  ///< inputs the caller waited for (small, out of order, or not ready)
    std::uint64_t generated = 0;  ///< inputs generated in all (either thread; some unused)
    double generate_seconds = 0;  ///< seconds spent filling inputs, both threads
  };

  /// Starts the generator thread when some application's inputs are at least
  /// `options.min_prefetch_bytes`; the input of task (k, i) is
  /// fill_input(apps[k], seed_of(k, i), k, 0).
  InputPrefetcher(std::vector<model::AppSpec> apps, SeedOf seed_of, Options options);
  InputPrefetcher(std::vector<model::AppSpec> apps, SeedOf seed_of)
      : InputPrefetcher(std::move(apps), std::move(seed_of), Options{}) {}
  ~InputPrefetcher();
  InputPrefetcher(const InputPrefetcher&) = delete;
  InputPrefetcher& operator=(const InputPrefetcher&) = delete;

  /// The input of task `index` of application `app`: taken ready if the generator made it,
  /// else generated now. Callable from one thread at a time (the node's loop thread).
  /// Buffers return to a free list when the last reader (the transport, the executor)
  /// lets go, from whichever thread that is.
  InputBuffer get(std::uint32_t app, std::uint64_t index);

  /// Writes the input of task `index` of application `app` into `out` (of its
  /// input_bytes(); a kernel of fixed input size), on the caller: for small inputs the
  /// caller makes many to an allocation (node::SmallPayloads). Counted as made on
  /// the caller; same thread as get().
  void fill(std::uint32_t app, std::uint64_t index, std::span<std::byte> out);

  /// What it did so far. Called on get()'s thread (it reads figures only get() writes).
  Stats stats() const;

 private:
  struct Shared;
  void generate_ahead();
  /// Counts an input made on get()'s thread, from `started` (small_: no lock).
  void made_on_caller(std::chrono::steady_clock::time_point started);

  std::shared_ptr<Shared> shared_;
  std::thread thread_;
  Stats small_;  ///< the small inputs get() made, counted on its own thread (no lock)
};

}  // namespace treefarm::tasks
