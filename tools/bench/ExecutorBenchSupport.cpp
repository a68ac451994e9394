#include "tools/bench/ExecutorBenchSupport.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/exec/Topology.hpp"
#include "tasks/Checksum.hpp"
#include "tasks/Kernels.hpp"

namespace treefarm::bench::exec_bench {

using exec::ExecDone;
using exec::Executor;

bool pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

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

std::optional<BenchStart> start_bench(std::ostream& out, const char* benchmark, bool json,
                                      std::initializer_list<std::pair<const char*, std::uint64_t>> positive) {
  for (const auto& [name, value] : positive) require_positive(value, name);
  BenchStart start;
  start.cores = two_cores_or_skip(out, benchmark, json);
  if (start.cores.empty()) return std::nullopt;
  start.load_before = load_average();
  tasks::init_blas();
  return start;
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

}  // namespace treefarm::bench::exec_bench
