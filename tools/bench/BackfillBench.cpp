#include "tools/bench/BackfillBench.hpp"

#include <algorithm>
#include <atomic>
#include <iomanip>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/exec/Executor.hpp"
#include "runtime/model/Application.hpp"
#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"
#include "tools/bench/ExecutorBenchSupport.hpp"

namespace treefarm::bench {

namespace {

using namespace exec_bench;
using exec::Executor;
using exec::ExecutorConfig;

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
      exec::ExecTask task;
      task.id = i;
      task.cores = pool.app().cores_per_task;
      task.run = [&pool, &start_order, &checksums, &next_start, i](exec::TaskContext& ctx) {
        start_order[i] = next_start.fetch_add(1, std::memory_order_relaxed);
        checksums[i] = tasks::run_task(pool.app(), *pool.input(0), &ctx.arena());
      };
      executor.submit(std::move(task));
    }
    for (const exec::ExecDone& d : wait_done(executor)) {
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

}  // namespace

int bench_backfill(std::ostream& out, const BackfillBenchOptions& o) {
  const auto start = start_bench(out, "backfill", o.json,
                                 {{"matmul_n", o.matmul_n}, {"matadd_n", o.matadd_n},
                                  {"matadd_per_matmul", o.matadd_per_matmul}, {"rounds", o.rounds},
                                  {"window", o.window}, {"repeats", o.repeats}});
  if (!start) return 0;
  const std::vector<int>& cores = start->cores;
  const double load_before = start->load_before;

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

}  // namespace treefarm::bench
