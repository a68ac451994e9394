#include "tools/bench/ExecutorBench.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/model/Application.hpp"
#include "tasks/Checksum.hpp"
#include "tasks/Kernels.hpp"
#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"
#include "runtime/exec/Executor.hpp"
#include "runtime/exec/Topology.hpp"

namespace treefarm::tools {

namespace {

using Clock = std::chrono::steady_clock;
using exec::ExecDone;
using exec::Executor;
using exec::ExecutorConfig;
using exec::ExecTask;
using exec::TaskContext;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// CPU seconds (user + system) used so far by all threads of this process.
double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return secs(usage.ru_utime) + secs(usage.ru_stime);
}

double matmul_flops(std::uint32_t n) { return 2.0 * n * n * static_cast<double>(n); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// 1-minute load average, or -1 if unknown: printed so that a reader knows how busy the
/// machine was.
double load_average() {
  double load[1] = {-1};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

void require_positive(std::uint64_t value, const char* what) {
  if (value == 0) {
    throw std::invalid_argument(std::string("bench: ") + what + " is 0, expected at least 1");
  }
}

/// The first two usable cores, or an empty vector (and a message in `out`) if there are
/// fewer than two.
std::vector<int> two_cores_or_skip(std::ostream& out, const char* benchmark, bool json) {
  const exec::Topology topo = exec::discover_topology();
  if (topo.cores.size() >= 2) return exec::restrict_cores(topo, 2);
  const std::string reason = "needs 2 usable cores, this process may use " +
                             std::to_string(topo.cores.size()) +
                             " (check taskset / the cpuset cgroup)";
  if (json) {
    out << nlohmann::json{{"benchmark", benchmark}, {"skipped", true}, {"reason", reason}}.dump(2)
        << "\n";
  } else {
    out << "skipped: bench " << benchmark << " " << reason << "\n";
  }
  return {};
}

/// Waits (poll on notify_fd) until the executor has finished tasks, and returns them.
/// Rethrows the first task error.
std::vector<ExecDone> wait_done(Executor& executor) {
  for (;;) {
    std::vector<ExecDone> done = executor.poll_done();
    if (!done.empty()) {
      for (const ExecDone& d : done) {
        if (d.error) std::rethrow_exception(d.error);
      }
      return done;
    }
    pollfd p{executor.notify_fd(), POLLIN, 0};
    ::poll(&p, 1, 1000);
  }
}

model::AppSpec matrix_app(const char* name, model::Kernel kernel, std::uint32_t n,
                          std::uint32_t cores) {
  model::AppSpec app;
  app.name = name;
  app.kernel = kernel;
  app.n = n;
  app.cores_per_task = cores;
  return app;
}

/// Checks a task's checksum against its pool's expected one.
void verify(const tasks::InputPool& pool, double got) {
  if (!tasks::checksum_matches(pool.expected_checksum(0), got, pool.app())) {
    std::ostringstream msg;
    msg << std::setprecision(17) << "bench: checksum of a " << model::to_string(pool.app().kernel)
        << " task (n = " << pool.app().n << ", " << pool.app().cores_per_task
        << " cores) is " << got << ", expected " << pool.expected_checksum(0);
    throw std::runtime_error(msg.str());
  }
}

// ---------------------------------------------------------------------------------------
// bench backfill

struct BackfillRun {
  double wall_seconds = 0;
  double busy_core_seconds = 0;
  double cpu_seconds = 0;  // CPU time the process got: < busy_core_seconds when preempted
  std::uint64_t matadd_tasks = 0;
  std::uint64_t matmul_tasks = 0;
  std::uint32_t max_matmul_bypass = 0;

  void add(const BackfillRun& r) {
    wall_seconds += r.wall_seconds;
    busy_core_seconds += r.busy_core_seconds;
    cpu_seconds += r.cpu_seconds;
    matadd_tasks += r.matadd_tasks;
    matmul_tasks += r.matmul_tasks;
    max_matmul_bypass = std::max(max_matmul_bypass, r.max_matmul_bypass);
  }
  double utilisation() const { return busy_core_seconds / (2.0 * wall_seconds); }
  double tasks_per_second() const {
    return static_cast<double>(matadd_tasks + matmul_tasks) / wall_seconds;
  }
  double matadd_per_second() const { return static_cast<double>(matadd_tasks) / wall_seconds; }
  double matmul_per_second() const { return static_cast<double>(matmul_tasks) / wall_seconds; }
};

/// One pass of the stream through `executor`, keeping `window` tasks in flight.
BackfillRun run_stream(Executor& executor, const tasks::InputPool& matadd,
                       const tasks::InputPool& matmul, const BackfillBenchOptions& o) {
  const std::uint32_t period = o.matadd_per_matmul + 1;
  const std::size_t total = static_cast<std::size_t>(o.rounds) * period;
  // Filled by the task threads at distinct indices; read after each task's ExecDone
  // (poll_done's mutex orders the accesses).
  std::vector<std::uint64_t> start_order(total, 0);
  std::vector<double> checksums(total, 0);
  std::atomic<std::uint64_t> next_start{0};
  auto is_matmul = [period](std::size_t i) { return i % period == period - 1; };

  BackfillRun run;
  std::size_t submitted = 0;
  std::size_t finished = 0;
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  while (finished < total) {
    while (submitted < total && submitted - finished < o.window) {
      const std::size_t i = submitted++;
      const tasks::InputPool& pool = is_matmul(i) ? matmul : matadd;
      ExecTask task;
      task.id = i;
      task.cores = pool.app().cores_per_task;
      task.run = [&pool, &start_order, &checksums, &next_start, i](TaskContext& ctx) {
        start_order[i] = next_start.fetch_add(1, std::memory_order_relaxed);
        checksums[i] = tasks::run_task(pool.app(), *pool.input(0), &ctx.arena());
      };
      executor.submit(std::move(task));
    }
    for (const ExecDone& d : wait_done(executor)) {
      ++finished;
      run.busy_core_seconds += d.run_seconds * static_cast<double>(d.cores.size());
    }
  }
  run.wall_seconds = seconds_since(start);
  run.cpu_seconds = process_cpu_seconds() - cpu_start;

  for (std::size_t i = 0; i < total; ++i) {
    verify(is_matmul(i) ? matmul : matadd, checksums[i]);
    if (!is_matmul(i)) {
      ++run.matadd_tasks;
      continue;
    }
    // Bypass count of matmul task i: later-submitted tasks that started before it. Exact
    // for a task holding every core: nothing starts between its dispatch and its first
    // instruction, so its start order is its dispatch order. (Two 1-core tasks dispatched
    // together may begin in either order, so theirs would not be.)
    ++run.matmul_tasks;
    std::uint32_t bypass = 0;
    for (std::size_t j = i + 1; j < total; ++j) {
      if (start_order[j] < start_order[i]) ++bypass;
    }
    run.max_matmul_bypass = std::max(run.max_matmul_bypass, bypass);
  }
  return run;
}

nlohmann::json to_json(const BackfillRun& r) {
  return {{"wall_seconds", r.wall_seconds},
          {"busy_core_seconds", r.busy_core_seconds},
          {"utilisation", r.utilisation()},
          {"process_cpu_seconds", r.cpu_seconds},
          {"tasks", r.matadd_tasks + r.matmul_tasks},
          {"matadd_tasks", r.matadd_tasks},
          {"matmul_tasks", r.matmul_tasks},
          {"tasks_per_second", r.tasks_per_second()},
          {"matadd_per_second", r.matadd_per_second()},
          {"matmul_per_second", r.matmul_per_second()},
          {"max_matmul_bypass", r.max_matmul_bypass}};
}

// ---------------------------------------------------------------------------------------
// bench kernel

/// Binds the calling thread to one PU; false on failure.
bool pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

/// A rate and the share of one core this process got while measuring it (process CPU
/// seconds / wall seconds: about 1 when nothing else runs on the core).
struct Rate {
  double gflops = 0;
  double cpu_share = 0;
};

/// `count` back-to-back tasks::matmul calls on a thread pinned to `cpu`.
Rate standalone_gflops(const tasks::InputPool& pool, std::uint32_t count, int cpu) {
  const std::uint32_t n = pool.app().n;
  const std::size_t elements = static_cast<std::size_t>(n) * n;
  const auto* a = reinterpret_cast<const double*>(pool.input(0)->data());
  double seconds = 0;
  double cpu_seconds = 0;
  std::exception_ptr error;
  std::thread thread([&] {
    try {
      if (!pin_this_thread(cpu)) {
        throw std::runtime_error("bench kernel: cannot pin a thread to PU " + std::to_string(cpu));
      }
      std::vector<double> c(elements);
      tasks::matmul(a, a + elements, c.data(), n);  // warm-up: page faults, BLAS buffers
      const double cpu_start = process_cpu_seconds();
      const auto start = Clock::now();
      for (std::uint32_t i = 0; i < count; ++i) tasks::matmul(a, a + elements, c.data(), n);
      seconds = seconds_since(start);
      cpu_seconds = process_cpu_seconds() - cpu_start;
      verify(pool, tasks::checksum_matrix(c.data(), n));
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) std::rethrow_exception(error);
  return {static_cast<double>(count) * matmul_flops(n) / seconds / 1e9, cpu_seconds / seconds};
}

/// A task's run time and the share of its cores the process got meanwhile.
struct TaskTime {
  double seconds = 0;
  double cpu_share = 0;
};

/// Submits one matmul task of `pool` holding `cores` cores and waits for it.
TaskTime run_one(Executor& executor, const tasks::InputPool& pool, std::uint32_t cores) {
  const double cpu_start = process_cpu_seconds();
  double checksum = 0;
  ExecTask task;
  task.cores = cores;
  task.run = [&pool, &checksum](TaskContext& ctx) {
    checksum = tasks::run_task(pool.app(), *pool.input(0), &ctx.arena());
  };
  executor.submit(std::move(task));
  const std::vector<ExecDone> done = wait_done(executor);
  const double cpu_seconds = process_cpu_seconds() - cpu_start;
  verify(pool, checksum);
  const double seconds = done.front().run_seconds;
  return {seconds, cpu_seconds / (seconds * cores)};
}

/// `count` matmul tasks streamed (2 in flight) through a 1-core executor.
Rate executor_gflops(Executor& executor, const tasks::InputPool& pool, std::uint32_t count) {
  std::vector<double> checksums(count, 0);
  std::uint32_t submitted = 0;
  std::uint32_t finished = 0;
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  while (finished < count) {
    while (submitted < count && submitted - finished < 2) {
      const std::uint32_t i = submitted++;
      ExecTask task;
      task.id = i;
      task.cores = 1;
      task.run = [&pool, &checksums, i](TaskContext& ctx) {
        checksums[i] = tasks::run_task(pool.app(), *pool.input(0), &ctx.arena());
      };
      executor.submit(std::move(task));
    }
    finished += static_cast<std::uint32_t>(wait_done(executor).size());
  }
  const double seconds = seconds_since(start);
  const double cpu_seconds = process_cpu_seconds() - cpu_start;
  for (double c : checksums) verify(pool, c);
  return {static_cast<double>(count) * matmul_flops(pool.app().n) / seconds / 1e9,
          cpu_seconds / seconds};
}

std::string fixed(double v, int precision) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

std::string core_list(const std::vector<int>& cores) {
  std::string s;
  for (int c : cores) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

}  // namespace

int bench_backfill(std::ostream& out, const BackfillBenchOptions& o) {
  require_positive(o.matmul_n, "matmul_n");
  require_positive(o.matadd_n, "matadd_n");
  require_positive(o.matadd_per_matmul, "matadd_per_matmul");
  require_positive(o.rounds, "rounds");
  require_positive(o.window, "window");
  require_positive(o.repeats, "repeats");
  const std::vector<int> cores = two_cores_or_skip(out, "backfill", o.json);
  if (cores.empty()) return 0;
  const double load_before = load_average();

  tasks::init_blas();
  const tasks::InputPool matadd(matrix_app("matadd", model::Kernel::matadd, o.matadd_n, 1), 1, 0, 1);
  const tasks::InputPool matmul(matrix_app("matmul", model::Kernel::matmul, o.matmul_n, 2), 1, 1, 1);

  ExecutorConfig with_backfill{cores, 0, true, true};
  ExecutorConfig fifo{cores, 0, false, true};
  Executor backfill_executor(with_backfill);
  Executor fifo_executor(fifo);

  // Warm-up (untimed): arenas, thread-local scratch buffers, page faults, on both.
  BackfillBenchOptions warm = o;
  warm.rounds = 2;
  run_stream(backfill_executor, matadd, matmul, warm);
  run_stream(fifo_executor, matadd, matmul, warm);

  BackfillRun total_backfill;
  BackfillRun total_fifo;
  for (std::uint32_t r = 0; r < o.repeats; ++r) {
    const bool backfill_first = (r % 2) == 0;  // B F, F B, B F, ...
    for (int k = 0; k < 2; ++k) {
      const bool backfill = (k == 0) == backfill_first;
      if (backfill) {
        total_backfill.add(run_stream(backfill_executor, matadd, matmul, o));
      } else {
        total_fifo.add(run_stream(fifo_executor, matadd, matmul, o));
      }
    }
  }
  const double load_after = load_average();

  const double util_ratio = total_backfill.utilisation() / total_fifo.utilisation();
  const double tput_ratio = total_backfill.tasks_per_second() / total_fifo.tasks_per_second();
  const double matadd_ratio = total_backfill.matadd_per_second() / total_fifo.matadd_per_second();
  const double matmul_ratio = total_backfill.matmul_per_second() / total_fifo.matmul_per_second();
  const std::uint64_t tasks_per_run = static_cast<std::uint64_t>(o.rounds) * (o.matadd_per_matmul + 1);

  if (o.json) {
    nlohmann::json j{
        {"benchmark", "backfill"},
        {"skipped", false},
        {"cores", cores},
        {"workload",
         {{"matmul_n", o.matmul_n},
          {"matmul_cores", 2},
          {"matadd_n", o.matadd_n},
          {"matadd_cores", 1},
          {"matadd_per_matmul", o.matadd_per_matmul},
          {"rounds", o.rounds},
          {"tasks_per_run", tasks_per_run},
          {"window", o.window},
          {"repeats", o.repeats}}},
        {"load_average_before", load_before},
        {"load_average_after", load_after},
        {"backfill", to_json(total_backfill)},
        {"fifo", to_json(total_fifo)},
        {"ratios",
         {{"utilisation", util_ratio},
          {"tasks_per_second", tput_ratio},
          {"matadd_per_second", matadd_ratio},
          {"matmul_per_second", matmul_ratio}}}};
    out << j.dump(2) << "\n";
    return 0;
  }

  out << "bench backfill: cores " << core_list(cores) << "; stream of " << o.rounds << " x ("
      << o.matadd_per_matmul << " matadd n=" << o.matadd_n << " on 1 core, then 1 matmul n="
      << o.matmul_n << " on 2 cores) = " << tasks_per_run << " tasks, window " << o.window
      << ", " << o.repeats << " run(s) per discipline\n"
      << "load average (1 min): " << fixed(load_before, 2) << " before, "
      << fixed(load_after, 2) << " after\n";
  out << std::left << std::setw(10) << "queue" << std::right << std::setw(10) << "wall s"
      << std::setw(13) << "utilisation" << std::setw(10) << "tasks/s" << std::setw(10)
      << "matadd/s" << std::setw(10) << "matmul/s" << std::setw(20) << "max bypass matmul"
      << std::setw(16) << "cpu s / busy s" << "\n";
  for (const auto& [name, r] : {std::pair<const char*, const BackfillRun&>{"backfill", total_backfill},
                                std::pair<const char*, const BackfillRun&>{"fifo", total_fifo}}) {
    out << std::left << std::setw(10) << name << std::right << std::setw(10)
        << fixed(r.wall_seconds, 3) << std::setw(13) << fixed(r.utilisation(), 4) << std::setw(10)
        << fixed(r.tasks_per_second(), 1) << std::setw(10) << fixed(r.matadd_per_second(), 1)
        << std::setw(10) << fixed(r.matmul_per_second(), 1) << std::setw(20)
        << r.max_matmul_bypass << std::setw(16) << fixed(r.cpu_seconds / r.busy_core_seconds, 3)
        << "\n";
  }
  out << "(cpu s / busy s: CPU time this process got per core-second its tasks held; about 1\n"
         " when nothing else runs on these cores, lower when other load preempts the tasks)\n";
  out << "ratio backfill/fifo: utilisation " << fixed(util_ratio, 3) << ", tasks/s "
      << fixed(tput_ratio, 3) << " (matadd " << fixed(matadd_ratio, 3) << ", matmul "
      << fixed(matmul_ratio, 3) << ")\n";
  return 0;
}

int bench_kernel(std::ostream& out, const KernelBenchOptions& o) {
  require_positive(o.n, "n");
  require_positive(o.tasks, "tasks");
  require_positive(o.rounds, "rounds");
  require_positive(o.speedup_reps, "speedup_reps");
  for (std::uint32_t n : o.speedup_n) require_positive(n, "a speed-up matrix order");
  const std::vector<int> cores = two_cores_or_skip(out, "kernel", o.json);
  if (cores.empty()) return 0;
  const double load_before = load_average();
  tasks::init_blas();

  // 1-core efficiency: executor vs standalone on the same core, alternating.
  const tasks::InputPool pool(matrix_app("matmul", model::Kernel::matmul, o.n, 1), 1, 0, 1);
  std::vector<Rate> standalone;
  std::vector<Rate> in_executor;
  {
    Executor one_core(ExecutorConfig{{cores.front()}, 0, true, true});
    run_one(one_core, pool, 1);  // warm-up: arena, scratch buffer
    for (std::uint32_t r = 0; r < o.rounds; ++r) {
      if (r % 2 == 0) {
        standalone.push_back(standalone_gflops(pool, o.tasks, cores.front()));
        in_executor.push_back(executor_gflops(one_core, pool, o.tasks));
      } else {
        in_executor.push_back(executor_gflops(one_core, pool, o.tasks));
        standalone.push_back(standalone_gflops(pool, o.tasks, cores.front()));
      }
    }
  }
  auto gflops_of = [](const std::vector<Rate>& rates) {
    std::vector<double> v;
    for (const Rate& r : rates) v.push_back(r.gflops);
    return v;
  };
  auto share_of = [](const std::vector<Rate>& rates) {
    std::vector<double> v;
    for (const Rate& r : rates) v.push_back(r.cpu_share);
    return v;
  };
  const double standalone_median = median(gflops_of(standalone));
  const double executor_median = median(gflops_of(in_executor));
  const double standalone_share = median(share_of(standalone));
  const double executor_share = median(share_of(in_executor));
  const double efficiency = executor_median / standalone_median;

  // 2-core vs 1-core speed-up, one task at a time on a 2-core executor.
  struct Speedup {
    std::uint32_t n;
    double one_core_seconds;
    double two_core_seconds;
    double one_core_cpu_share;
    double two_core_cpu_share;
  };
  std::vector<Speedup> speedups;
  if (!o.speedup_n.empty()) {
    Executor two_cores(ExecutorConfig{cores, 0, true, true});
    for (std::uint32_t n : o.speedup_n) {
      const tasks::InputPool one(matrix_app("matmul", model::Kernel::matmul, n, 1), 1, 0, 1);
      const tasks::InputPool two(matrix_app("matmul", model::Kernel::matmul, n, 2), 1, 0, 1);
      run_one(two_cores, one, 1);  // warm-up
      run_one(two_cores, two, 2);
      std::vector<double> t1, t2, share1, share2;
      for (std::uint32_t r = 0; r < o.speedup_reps; ++r) {
        const TaskTime a = run_one(two_cores, one, 1);
        const TaskTime b = run_one(two_cores, two, 2);
        t1.push_back(a.seconds);
        share1.push_back(a.cpu_share);
        t2.push_back(b.seconds);
        share2.push_back(b.cpu_share);
      }
      speedups.push_back({n, median(t1), median(t2), median(share1), median(share2)});
    }
  }
  const double load_after = load_average();

  if (o.json) {
    nlohmann::json sp = nlohmann::json::array();
    for (const Speedup& s : speedups) {
      sp.push_back({{"n", s.n},
                    {"one_core_seconds", s.one_core_seconds},
                    {"two_core_seconds", s.two_core_seconds},
                    {"one_core_gflops", matmul_flops(s.n) / s.one_core_seconds / 1e9},
                    {"two_core_gflops", matmul_flops(s.n) / s.two_core_seconds / 1e9},
                    {"speedup", s.one_core_seconds / s.two_core_seconds},
                    {"one_core_cpu_share", s.one_core_cpu_share},
                    {"two_core_cpu_share", s.two_core_cpu_share}});
    }
    nlohmann::json j{{"benchmark", "kernel"},
                     {"skipped", false},
                     {"cores", cores},
                     {"blas_serial", tasks::blas_is_serial()},
                     {"load_average_before", load_before},
                     {"load_average_after", load_after},
                     {"efficiency",
                      {{"n", o.n},
                       {"tasks_per_round", o.tasks},
                       {"rounds", o.rounds},
                       {"standalone_gflops", standalone_median},
                       {"executor_gflops", executor_median},
                       {"executor_tasks_per_second", executor_median * 1e9 / matmul_flops(o.n)},
                       {"standalone_gflops_rounds", gflops_of(standalone)},
                       {"executor_gflops_rounds", gflops_of(in_executor)},
                       {"standalone_cpu_share", standalone_share},
                       {"executor_cpu_share", executor_share},
                       {"ratio", efficiency},
                       {"target", 0.95},
                       {"meets_target", efficiency >= 0.95}}},
                     {"speedup", sp}};
    out << j.dump(2) << "\n";
    return 0;
  }

  out << "bench kernel: cores " << core_list(cores) << "; BLAS "
      << (tasks::blas_is_serial() ? "serial" : "threaded (forced to 1 thread)")
      << "; load average (1 min): " << fixed(load_before, 2) << " before, "
      << fixed(load_after, 2) << " after\n";
  out << "1-core matmul n=" << o.n << ", " << o.tasks << " tasks x " << o.rounds
      << " rounds (medians), core " << cores.front() << ":\n"
      << "  standalone cblas_dgemm loop   " << fixed(standalone_median, 2)
      << " GFLOP/s  (cpu share " << fixed(standalone_share, 3) << ")\n"
      << "  executor (run_task)           " << fixed(executor_median, 2) << " GFLOP/s  ("
      << fixed(executor_median * 1e9 / matmul_flops(o.n), 2) << " tasks/s, cpu share "
      << fixed(executor_share, 3) << ")\n"
      << "  ratio executor/standalone     " << fixed(efficiency, 3)
      << (efficiency >= 0.95 ? "  (target >= 0.95: met)\n" : "  (target >= 0.95: NOT met)\n");
  if (!speedups.empty()) {
    out << "matmul task on 2 cores vs 1 core (median of " << o.speedup_reps << "):\n";
    for (const Speedup& s : speedups) {
      out << "  n=" << std::left << std::setw(6) << s.n << std::right << " 1 core "
          << fixed(matmul_flops(s.n) / s.one_core_seconds / 1e9, 2) << " GFLOP/s, 2 cores "
          << fixed(matmul_flops(s.n) / s.two_core_seconds / 1e9, 2) << " GFLOP/s, speed-up "
          << fixed(s.one_core_seconds / s.two_core_seconds, 3) << "  (cpu share "
          << fixed(s.one_core_cpu_share, 3) << " / " << fixed(s.two_core_cpu_share, 3) << ")\n";
    }
  }
  return 0;
}

}  // namespace treefarm::tools
