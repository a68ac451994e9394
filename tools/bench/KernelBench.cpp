#include "tools/bench/KernelBench.hpp"

#include <pthread.h>
#include <sched.h>

#include <iomanip>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/exec/Executor.hpp"
#include "runtime/model/Application.hpp"
#include "tasks/BlasKernel.hpp"
#include "tasks/Checksum.hpp"
#include "tasks/CpuPeak.hpp"
#include "tasks/Kernels.hpp"
#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"
#include "tools/bench/ExecutorBenchSupport.hpp"

namespace treefarm::bench {

namespace {

using namespace exec_bench;
using exec::Executor;
using exec::ExecutorConfig;
using exec::ExecTask;
using exec::TaskContext;

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
      verify(pool, tasks::checksum_product(c.data(), n));  // matmul's checksum (tasks/Checksum.hpp)
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
  const std::vector<exec::ExecDone> done = wait_done(executor);
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

}  // namespace

int bench_kernel(std::ostream& out, const KernelBenchOptions& o) {
  for (std::uint32_t n : o.speedup_n) require_positive(n, "a speed-up matrix order");
  const auto start = start_bench(out, "kernel", o.json,
                                 {{"n", o.n}, {"tasks", o.tasks}, {"rounds", o.rounds}, {"speedup_reps", o.speedup_reps}});
  if (!start) return 0;
  const std::vector<int>& cores = start->cores;
  const double load_before = start->load_before;
  // The reference for the kernel: this core's FMA peak, measured (tasks/CpuPeak.hpp).
  const tasks::CpuPeak peak = tasks::measure_cpu_peak();
  const tasks::BlasInfo blas = tasks::blas_info();

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
                     {"speedup", sp},
                     {"blas", tasks::to_json(blas)},
                     {"peak", tasks::to_json(peak)},
                     {"of_peak",
                      {{"standalone_fraction", standalone_median / peak.peak_gflops},
                       {"executor_fraction", executor_median / peak.peak_gflops},
                       {"target", 0.75},
                       {"meets_target", standalone_median / peak.peak_gflops >= 0.75}}}};
    out << j.dump(2) << "\n";
    return 0;
  }

  out << "bench kernel: cores " << core_list(cores) << "; BLAS "
      << (tasks::blas_is_serial() ? "serial" : "threaded (forced to 1 thread)")
      << "; load average (1 min): " << fixed(load_before, 2) << " before, "
      << fixed(load_after, 2) << " after\n";
  const double of_peak = standalone_median / peak.peak_gflops;
  out << "BLAS " << blas.library << ", kernel " << blas.kernel << " (chosen by " << blas.selected_by << ")\n"
      << "per-core FMA peak " << fixed(peak.peak_gflops, 2) << " GFLOP/s = " << fixed(peak.ghz, 3) << " GHz x "
      << peak.flop_per_cycle << " flop/cycle (" << peak.vector_isa << "; measured "
      << fixed(peak.measured_flop_per_cycle, 2) << "; /proc/cpuinfo says " << fixed(peak.cpuinfo_mhz, 0)
      << " MHz)\n"
      << "  standalone dgemm / peak       " << fixed(of_peak, 3)
      << (of_peak >= 0.75 ? "  (target >= 0.75: met)\n" : "  (target >= 0.75: NOT met)\n")
      << "  executor dgemm / peak         " << fixed(executor_median / peak.peak_gflops, 3) << "\n";
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

}  // namespace treefarm::bench
