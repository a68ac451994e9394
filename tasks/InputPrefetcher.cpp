#include "tasks/InputPrefetcher.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace treefarm::tasks {

namespace {

using Buffer = std::unique_ptr<std::vector<std::byte>>;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct InputPrefetcher::Shared {
  struct PerApp {
    bool prefetch = false;
    bool recycles = false;                   ///< made ahead into recycled buffers (fixed at construction)
    std::size_t depth = 0;                   ///< inputs kept ready at most
    std::uint64_t next = 0;                  ///< next index the generator makes
    std::optional<std::uint64_t> in_progress;
    std::map<std::uint64_t, Buffer> ready;   ///< index -> input
    std::vector<Buffer> free;                ///< recycled buffers of this application's size
  };

  std::vector<model::AppSpec> apps;
  SeedOf seed_of;
  Options options;
  mutable std::mutex mutex;
  std::condition_variable wake;  // the generator waits for room; the caller for an input in progress
  bool stop = false;
  std::vector<PerApp> per_app;
  Stats stats;

  Buffer take_free(std::size_t k) {  // under the lock
    auto& free_list = per_app[k].free;
    if (free_list.empty()) return std::make_unique<std::vector<std::byte>>();
    Buffer b = std::move(free_list.back());
    free_list.pop_back();
    return b;
  }

  void give_back(std::size_t k, Buffer b) {  // under the lock
    if (per_app[k].free.size() < per_app[k].depth) per_app[k].free.push_back(std::move(b));
  }

  void fill(std::size_t k, std::uint64_t index, std::vector<std::byte>& out) const {
    const auto app = static_cast<std::uint32_t>(k);
    fill_input(apps[k], seed_of(app, index), app, 0, out);
  }
};

InputPrefetcher::InputPrefetcher(std::vector<model::AppSpec> apps, SeedOf seed_of, Options options)
    : shared_(std::make_shared<Shared>()) {
  auto& s = *shared_;
  s.apps = std::move(apps);
  s.seed_of = std::move(seed_of);
  s.options = options;
  s.per_app.resize(s.apps.size());
  std::size_t prefetching = 0;
  for (const auto& app : s.apps) {
    if (app.kernel != model::Kernel::abstract && app.input_bytes() >= options.min_prefetch_bytes) ++prefetching;
  }
  for (std::size_t k = 0; k < s.apps.size(); ++k) {
    const auto& app = s.apps[k];
    auto& a = s.per_app[k];
    if (app.kernel == model::Kernel::abstract) continue;  // get() refuses it (fill_input throws)
    const std::size_t bytes = app.input_bytes();
    a.prefetch = prefetching > 0 && bytes >= options.min_prefetch_bytes;
    a.recycles = a.prefetch;
    // The budget shared evenly; at least one input ahead, at most max_ahead.
    a.depth = a.prefetch ? std::clamp<std::size_t>(options.budget_bytes / (prefetching * bytes), 1,
                                                   std::max<std::size_t>(options.max_ahead, 1))
                         : 0;
  }
  if (prefetching > 0) thread_ = std::thread([this] { generate_ahead(); });
}

InputPrefetcher::~InputPrefetcher() {
  {
    const std::lock_guard lock(shared_->mutex);
    shared_->stop = true;
  }
  shared_->wake.notify_all();
  if (thread_.joinable()) thread_.join();
}

void InputPrefetcher::generate_ahead() {
  auto& s = *shared_;
  std::unique_lock lock(s.mutex);
  for (;;) {
    if (s.stop) return;
    // The application with the fewest inputs ready (relative to its depth) that has room.
    std::optional<std::size_t> pick;
    for (std::size_t k = 0; k < s.per_app.size(); ++k) {
      const auto& a = s.per_app[k];
      if (!a.prefetch || a.ready.size() >= a.depth || a.next >= s.apps[k].tasks) continue;
      if (!pick || a.ready.size() * s.per_app[*pick].depth < s.per_app[*pick].ready.size() * a.depth) pick = k;
    }
    if (!pick) {
      s.wake.wait(lock);
      continue;
    }
    auto& a = s.per_app[*pick];
    const std::uint64_t index = a.next++;
    a.in_progress = index;
    Buffer buffer = s.take_free(*pick);
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      s.fill(*pick, index, *buffer);
    } catch (const std::exception&) {
      // (A command application's input file changed under us, say.) Stop making this
      // application's inputs ahead: get() makes them on the caller, where the error is
      // thrown to the master that can report it.
      lock.lock();
      a.prefetch = false;
      a.in_progress.reset();
      s.wake.notify_all();
      continue;
    }
    const double took = seconds_since(t0);
    lock.lock();
    ++s.stats.generated;
    s.stats.generate_seconds += took;
    a.in_progress.reset();
    a.ready.emplace(index, std::move(buffer));
    s.wake.notify_all();
  }
}

InputBuffer InputPrefetcher::get(std::uint32_t app, std::uint64_t index) {
  auto& s = *shared_;
  if (app >= s.apps.size())
    throw std::out_of_range("InputPrefetcher: no application " + std::to_string(app));
  auto& a = s.per_app[app];
  if (!a.recycles) {
    // A small input (or the abstract kernel, which fill_input refuses): made here into a
    // plain buffer, freed as usual — no free list, so no lock when the transport lets go.
    // Counted apart from the shared figures, with no lock (no lock per task).
    auto bytes = std::make_shared<std::vector<std::byte>>();
    const auto t0 = std::chrono::steady_clock::now();
    s.fill(app, index, *bytes);
    made_on_caller(t0);
    return bytes;
  }
  Buffer buffer;
  bool ready = false;
  {
    std::unique_lock lock(s.mutex);
    s.wake.wait(lock, [&] { return a.in_progress != index; });  // almost ready: wait for it
    if (auto it = a.ready.find(index); it != a.ready.end()) {
      buffer = std::move(it->second);
      a.ready.erase(it);
      ready = true;
      ++s.stats.ready;
      // Inputs left well behind (tasks done in an earlier run, re-issued out of order) are
      // recycled so that they do not hold the generator's room forever.
      while (!a.ready.empty() && a.ready.begin()->first + a.depth < index) {
        s.give_back(app, std::move(a.ready.begin()->second));
        a.ready.erase(a.ready.begin());
      }
    } else {
      ++s.stats.generated_on_caller;
      if (a.prefetch && index >= a.next) a.next = index + 1;  // tasks were skipped: follow
      buffer = s.take_free(app);
    }
  }
  s.wake.notify_all();  // room for the generator
  if (!ready) {
    const auto t0 = std::chrono::steady_clock::now();
    s.fill(app, index, *buffer);
    const double took = seconds_since(t0);
    const std::lock_guard lock(s.mutex);
    ++s.stats.generated;
    s.stats.generate_seconds += took;
  }
  // The buffer goes back to this application's free list when its last reader lets go
  // (after the prefetcher is gone, it is simply freed).
  std::weak_ptr<Shared> owner = shared_;
  return InputBuffer(buffer.release(), [owner, app](const std::vector<std::byte>* p) {
    Buffer back(const_cast<std::vector<std::byte>*>(p));
    if (auto state = owner.lock()) {
      const std::lock_guard lock(state->mutex);
      state->give_back(app, std::move(back));
    }
  });
}

void InputPrefetcher::fill(std::uint32_t app, std::uint64_t index, std::span<std::byte> out) {
  const auto& s = *shared_;
  if (app >= s.apps.size())
    throw std::out_of_range("InputPrefetcher: no application " + std::to_string(app));
  const auto t0 = std::chrono::steady_clock::now();
  fill_input(s.apps[app], s.seed_of(app, index), app, 0, out);
  made_on_caller(t0);
}

void InputPrefetcher::made_on_caller(std::chrono::steady_clock::time_point started) {
  ++small_.generated_on_caller;
  ++small_.generated;
  small_.generate_seconds += seconds_since(started);
}

InputPrefetcher::Stats InputPrefetcher::stats() const {
  Stats all;
  {
    const std::lock_guard lock(shared_->mutex);
    all = shared_->stats;
  }
  all.generated_on_caller += small_.generated_on_caller;
  all.generated += small_.generated;
  all.generate_seconds += small_.generate_seconds;
  return all;
}

}  // namespace treefarm::tasks
