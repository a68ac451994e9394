#include "runtime/exec/Executor.hpp"

#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include <hwloc.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include "runtime/exec/Backfill.hpp"
#include "runtime/exec/CpuList.hpp"

namespace treefarm::exec {

double thread_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Owns an hwloc topology used only for binding threads (read-only after load, so safe
// to share between threads).
class Binder {
 public:
  Binder() {
    if (hwloc_topology_init(&topo_) != 0) throw std::runtime_error("hwloc_topology_init failed");
    hwloc_topology_set_flags(topo_, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM |
                                        HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING);
    if (hwloc_topology_load(topo_) != 0) {
      hwloc_topology_destroy(topo_);
      throw std::runtime_error("hwloc_topology_load failed");
    }
  }
  ~Binder() { hwloc_topology_destroy(topo_); }
  Binder(const Binder&) = delete;
  Binder& operator=(const Binder&) = delete;

  /// Binds the calling thread to the PUs with these OS indices; false on failure.
  bool bind_this_thread(const std::vector<int>& pus) const {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == nullptr) return false;
    for (int pu : pus) hwloc_bitmap_set(set, static_cast<unsigned>(pu));
    int rc = hwloc_set_cpubind(topo_, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    return rc == 0;
  }

 private:
  hwloc_topology_t topo_ = nullptr;
};

// Pins each thread that enters a task's arena to one of the task's cores: the thread in
// arena slot i goes to cores[i]. Slot 0 is reserved for the task's own thread (already on
// cores[0]); TBB workers take slots 1..n-1, so concurrent threads get distinct cores.
// A worker leaving the arena goes back to the executor's whole core set, so it carries no
// stale single-core binding into whatever arena it joins next.
class PinObserver final : public tbb::task_scheduler_observer {
 public:
  PinObserver(tbb::task_arena& arena, const Binder& binder, std::vector<int> cores,
              const std::vector<int>& all_cores)
      : tbb::task_scheduler_observer(arena), binder_(binder), cores_(std::move(cores)),
        all_cores_(all_cores) {
    observe(true);
  }
  ~PinObserver() override { observe(false); }

  void on_scheduler_entry(bool is_worker) override {
    int slot = tbb::this_task_arena::current_thread_index();
    if (slot < 0 || (!is_worker && slot == 0)) return;  // the task's thread: already pinned
    binder_.bind_this_thread({cores_[static_cast<std::size_t>(slot) % cores_.size()]});
  }
  void on_scheduler_exit(bool is_worker) override {
    if (is_worker) binder_.bind_this_thread(all_cores_);
  }

 private:
  const Binder& binder_;
  std::vector<int> cores_;
  const std::vector<int>& all_cores_;
};

// An arena for one core set, reused by every task that gets exactly that set (never by
// two at once: running tasks hold disjoint cores). The observer is declared after the
// arena so that it stops observing before the arena goes away.
struct ArenaSlot {
  ArenaSlot(const std::vector<int>& cores, const Binder* binder, const std::vector<int>& all_cores)
      : arena(static_cast<int>(cores.size()), 1) {
    if (binder != nullptr) {
      observer.emplace(arena, *binder, cores, all_cores);
    } else {
      arena.initialize();
    }
  }
  tbb::task_arena arena;
  std::optional<PinObserver> observer;
};

class Context final : public TaskContext {
 public:
  Context(const std::vector<int>& cores, tbb::task_arena& arena) : cores_(cores), arena_(arena) {}
  const std::vector<int>& cores() const override { return cores_; }
  tbb::task_arena& arena() override { return arena_; }

 private:
  const std::vector<int>& cores_;
  tbb::task_arena& arena_;
};

// Arenas kept per core set; beyond this many, idle ones are dropped.
constexpr std::size_t kMaxCachedArenas = 64;

}  // namespace

struct Executor::Impl {
  struct Job {
    ExecTask task;
    Clock::time_point submitted;
    std::vector<std::size_t> slots;  // indices into config.cores
    std::vector<int> cores;          // OS indices
    std::shared_ptr<ArenaSlot> arena;
  };
  struct Pending {
    ExecTask task;
    Clock::time_point submitted;
  };
  // One thread per configured core, pinned to it; it runs the tasks whose first core it is.
  struct CoreThread {
    std::thread thread;
    std::condition_variable cv;
    std::optional<Job> job;
    bool quit = false;
  };

  explicit Impl(ExecutorConfig c) : config(std::move(c)), queue(config.backfill) {
    if (config.cores.empty()) {
      throw std::invalid_argument("Executor: no cores given, expected at least one PU index");
    }
    std::set<int> seen;
    for (int core : config.cores) {
      if (core < 0 || !seen.insert(core).second) {
        throw std::invalid_argument("Executor: bad core list (index " + std::to_string(core) +
                                    " negative or repeated), expected distinct PU OS indices");
      }
    }
    free_cores = static_cast<std::uint32_t>(config.cores.size());
    free_memory = config.memory;
    core_busy.assign(config.cores.size(), false);
    for (int cpu : config.shared_cpus)
      if (cpu < 0) throw std::invalid_argument("Executor: bad shared CPU " + std::to_string(cpu) + ", expected PU OS indices");
    if (config.pin) binder.emplace();
    notify = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (notify < 0) throw std::system_error(errno, std::generic_category(), "eventfd");

    std::vector<std::optional<bool>> pinned(config.cores.size());
    threads.reserve(config.cores.size());
    for (std::size_t i = 0; i < config.cores.size(); ++i) {
      threads.push_back(std::make_unique<CoreThread>());
    }
    for (std::size_t i = 0; i < config.cores.size(); ++i) {
      threads[i]->thread = std::thread([this, i, &pinned] { core_loop(i, pinned[i]); });
    }
    std::unique_lock lk(mu);
    started_cv.wait(lk, [&] {
      return std::all_of(pinned.begin(), pinned.end(), [](const auto& p) { return p.has_value(); });
    });
    for (std::size_t i = 0; i < pinned.size(); ++i) {
      if (!*pinned[i]) {
        lk.unlock();
        shutdown();
        throw std::invalid_argument("Executor: cannot bind a thread to PU " +
                                    (config.shared_cpus.empty() ? std::to_string(config.cores[i])
                                                                : "set " + format_cpu_list(config.shared_cpus)) +
                                    ", expected a PU this process may run on");
      }
    }
  }

  ~Impl() { shutdown(); }

  void shutdown() {
    {
      std::unique_lock lk(mu);
      stopping = true;
      idle_cv.wait(lk, [&] { return running == 0; });
      for (auto& t : threads) {
        t->quit = true;
        t->cv.notify_one();
      }
    }
    for (auto& t : threads) {
      if (t->thread.joinable()) t->thread.join();
    }
    arenas.clear();  // observers stop before the Binder they use goes away
    if (notify >= 0) {
      ::close(notify);
      notify = -1;
    }
  }

  void core_loop(std::size_t index, std::optional<bool>& pinned) {
    // Pinned to its own PU, or on a shared set bound to all of it (the OS places the thread).
    bool ok = !binder || binder->bind_this_thread(config.shared_cpus.empty() ? std::vector<int>{config.cores[index]}
                                                                             : config.shared_cpus);
    CoreThread& self = *threads[index];
    std::unique_lock lk(mu);
    pinned = ok;
    started_cv.notify_all();
    for (;;) {
      self.cv.wait(lk, [&] { return self.job.has_value() || self.quit; });
      if (!self.job) return;
      Job job = std::move(*self.job);
      self.job.reset();
      lk.unlock();

      ExecDone result;
      result.id = job.task.id;
      result.cores = job.cores;
      auto start = Clock::now();
      const double cpu_start = thread_cpu_seconds();
      result.queued_seconds = seconds_between(job.submitted, start);
      try {
        // Inside the task's arena, so TBB parallelism the task uses without naming
        // ctx.arena() stays on its cores too (execute() rethrows the task's exception).
        Context ctx(job.cores, job.arena->arena);
        job.arena->arena.execute([&] { job.task.run(ctx); });
      } catch (...) {
        result.error = std::current_exception();
      }
      result.run_seconds = seconds_between(start, Clock::now());
      result.cpu_seconds = std::max(0.0, thread_cpu_seconds() - cpu_start);
      job.task.run = nullptr;  // release captures outside the lock
      std::vector<std::shared_ptr<ArenaSlot>> evicted;

      lk.lock();
      for (std::size_t s : job.slots) core_busy[s] = false;
      free_cores += job.task.cores;
      if (config.memory > 0) free_memory += job.task.memory;
      --running;
      done.push_back(std::move(result));
      std::uint64_t one = 1;
      [[maybe_unused]] ssize_t w = ::write(notify, &one, sizeof one);
      job.arena.reset();
      dispatch_locked(evicted);
      if (running == 0) idle_cv.notify_all();
      if (!evicted.empty()) {
        lk.unlock();
        evicted.clear();
        lk.lock();
      }
    }
  }

  // Starts every queued task the queue discipline allows now. Called with mu held.
  void dispatch_locked(std::vector<std::shared_ptr<ArenaSlot>>& evicted) {
    if (stopping) return;
    const auto total = static_cast<std::uint32_t>(config.cores.size());
    while (auto entry = queue.start_next(free_cores, free_memory, total, config.memory)) {
      auto it = pending.find(entry->id);
      Job job{std::move(it->second.task), it->second.submitted, {}, {}, {}};
      pending.erase(it);
      for (std::size_t s = 0; s < core_busy.size() && job.slots.size() < entry->cores; ++s) {
        if (!core_busy[s]) {
          core_busy[s] = true;
          job.slots.push_back(s);
          job.cores.push_back(config.cores[s]);
        }
      }
      free_cores -= entry->cores;
      if (config.memory > 0) free_memory -= entry->memory;
      ++running;
      job.arena = arena_for(job.cores, evicted);
      CoreThread& t = *threads[job.slots.front()];
      t.job.emplace(std::move(job));
      t.cv.notify_one();
    }
  }

  std::shared_ptr<ArenaSlot> arena_for(const std::vector<int>& cores,
                                       std::vector<std::shared_ptr<ArenaSlot>>& evicted) {
    auto it = arenas.find(cores);
    if (it != arenas.end()) return it->second;
    if (arenas.size() >= kMaxCachedArenas) {
      for (auto a = arenas.begin(); a != arenas.end();) {
        if (a->second.use_count() == 1) {
          evicted.push_back(std::move(a->second));
          a = arenas.erase(a);
        } else {
          ++a;
        }
      }
    }
    // On a shared set the arena's threads are not pinned either: they keep the set's binding.
    auto slot = std::make_shared<ArenaSlot>(cores, binder && config.shared_cpus.empty() ? &*binder : nullptr, config.cores);
    arenas.emplace(cores, slot);
    return slot;
  }

  ExecutorConfig config;
  std::optional<Binder> binder;
  mutable std::mutex mu;
  std::condition_variable idle_cv;
  std::condition_variable started_cv;
  Backfill queue;
  std::unordered_map<std::uint64_t, Pending> pending;  // by queue id
  std::uint64_t next_queue_id = 0;
  std::vector<bool> core_busy;                          // by index into config.cores
  std::uint32_t free_cores = 0;
  std::uint64_t free_memory = 0;
  std::size_t running = 0;
  bool stopping = false;
  std::vector<ExecDone> done;
  int notify = -1;
  std::map<std::vector<int>, std::shared_ptr<ArenaSlot>> arenas;
  std::vector<std::unique_ptr<CoreThread>> threads;
};

Executor::Executor(ExecutorConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

Executor::~Executor() = default;

void Executor::submit(ExecTask task) {
  const auto total = impl_->config.cores.size();
  if (task.cores == 0 || task.cores > total) {
    throw std::invalid_argument("Executor::submit: task " + std::to_string(task.id) + " needs " +
                                std::to_string(task.cores) + " cores, expected 1.." +
                                std::to_string(total));
  }
  if (impl_->config.memory > 0 && task.memory > impl_->config.memory) {
    throw std::invalid_argument("Executor::submit: task " + std::to_string(task.id) + " needs " +
                                std::to_string(task.memory) + " bytes, expected at most " +
                                std::to_string(impl_->config.memory));
  }
  if (!task.run) {
    throw std::invalid_argument("Executor::submit: task " + std::to_string(task.id) +
                                " has no run function");
  }
  std::vector<std::shared_ptr<ArenaSlot>> evicted;
  std::lock_guard lk(impl_->mu);
  std::uint64_t qid = impl_->next_queue_id++;
  std::uint32_t cores = task.cores;
  std::uint64_t memory = task.memory;
  impl_->pending.emplace(qid, Impl::Pending{std::move(task), Clock::now()});
  impl_->queue.push(qid, cores, memory);
  impl_->dispatch_locked(evicted);
}

std::vector<ExecDone> Executor::poll_done() {
  std::lock_guard lk(impl_->mu);
  std::uint64_t count = 0;
  [[maybe_unused]] ssize_t r = ::read(impl_->notify, &count, sizeof count);
  return std::exchange(impl_->done, {});
}

int Executor::notify_fd() const { return impl_->notify; }

std::uint32_t Executor::total_cores() const {
  return static_cast<std::uint32_t>(impl_->config.cores.size());
}

std::uint32_t Executor::free_cores() const {
  std::lock_guard lk(impl_->mu);
  return impl_->free_cores;
}

std::size_t Executor::queued() const {
  std::lock_guard lk(impl_->mu);
  return impl_->queue.size();
}

std::size_t Executor::running() const {
  std::lock_guard lk(impl_->mu);
  return impl_->running;
}

}  // namespace treefarm::exec
