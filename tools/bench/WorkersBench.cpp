#include "tools/bench/WorkersBench.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/net/Codec.hpp"
#include "tools/bench/Scaling.hpp"
#include "tools/plot/ScalingPlot.hpp"

namespace treefarm::bench {

namespace {

std::string tree_toml(const WorkersBenchOptions& o, std::uint32_t workers, std::uint32_t buffer, std::uint32_t forwarders) {
  std::ostringstream f;
  f << "[[node]]\nname = \"master\"\ncores = 0\n\n";
  for (std::uint32_t i = 0; i < forwarders; ++i) f << "[[node]]\nname = \"f" << i << "\"\nparent = \"master\"\ncores = 0\n\n";
  for (std::uint32_t i = 0; i < workers; ++i) {
    const std::string parent = forwarders > 0 ? "f" + std::to_string(i % forwarders) : "master";
    f << "[[node]]\nname = \"w" << i << "\"\nparent = \"" << parent << "\"\ncores = 1\n\n";
  }
  f << "[[app]]\nname = \"bag\"\nkernel = \"" << o.kernel << "\"\n";
  if (o.kernel == "noop") f << "bytes = 16\n";
  else f << "n = " << o.n << "\n";
  f << "tasks = " << o.tasks << "\n\n[run]\nbuffer = " << buffer << "\n";
  return f.str();
}

/// bytes/s of heartbeats into and out of the master: each child sends one per second
/// carrying its own state and its subtree's (NodeDriver heartbeats), the master one empty
/// heartbeat per child per second (interval 1 s, the default).
std::pair<double, double> heartbeat_bytes_per_s(std::uint32_t workers, std::uint32_t forwarders) {
  const auto load = [](const std::string& name) {
    net::msg::NodeLoad l;
    l.name = name;
    l.cores = 1;
    return l;
  };
  const auto size = [](const net::msg::Heartbeat& h) { return static_cast<double>(net::encode(net::Message{h}).size()); };
  double in = 0;
  const std::uint32_t children = forwarders > 0 ? forwarders : workers;
  for (std::uint32_t c = 0; c < children; ++c) {
    net::msg::Heartbeat h;
    h.loads.push_back(load(forwarders > 0 ? "f" + std::to_string(c) : "w" + std::to_string(c)));
    if (forwarders > 0)
      for (std::uint32_t w = c; w < workers; w += forwarders) h.loads.push_back(load("w" + std::to_string(w)));
    if (h.loads.size() > net::max_loads) h.loads.resize(net::max_loads);
    in += size(h);
  }
  return {in, children * size(net::msg::Heartbeat{})};
}

}  // namespace

int bench_workers(std::ostream& out, const WorkersBenchOptions& o) {
  if (o.workers.empty()) throw std::invalid_argument("bench workers: --workers needs at least one size");
  if (o.buffers.empty()) throw std::invalid_argument("bench workers: --buffers needs at least one bound");
  if (std::find(o.workers.begin(), o.workers.end(), 0u) != o.workers.end())
    throw std::invalid_argument("bench workers: a size of 0 workers");
  if (o.depth != 1 && o.depth != 2) throw std::invalid_argument("bench workers: --depth must be 1 or 2, not " + std::to_string(o.depth));
  if (o.kernel != "matmul" && o.kernel != "matadd" && o.kernel != "noop")
    throw std::invalid_argument("bench workers: --kernel must be matmul, matadd or noop, not '" + o.kernel + "'");
  const auto dir = scratch_dir("bench-workers");
  tools::LaunchOptions lo;
  lo.timeout = o.timeout;
  nlohmann::json series = nlohmann::json::array();
  std::vector<plot::Series> curves;
  int rc = 0;
  if (!o.json) {
    char head[300];
    std::snprintf(head, sizeof head, "%7s %6s %7s %8s %11s %12s %14s %12s %12s %12s %8s\n", "buffer", "depth", "workers",
                  "join_s", "tasks/s", "rel_tasks/s", "cpu_s/1000", "rel_cpu", "KiB/worker", "shmKiB/wkr", "load1");
    out << head << std::flush;
  }
  for (const auto buffer : o.buffers) {
    nlohmann::json rows = nlohmann::json::array();
    std::vector<double> sizes, cpu_per_task, joins;
    double ref_rate = 0, ref_cpu = 0;
    for (const auto workers : o.workers) {
      const std::uint32_t forwarders = o.depth == 2 ? std::min(o.forwarders, workers) : 0;
      const auto f = run_tree(dir, "w" + std::to_string(workers) + "-b" + std::to_string(buffer),
                              tree_toml(o, workers, buffer, forwarders), lo);
      if (f.rc != 0) rc = f.rc;
      else if (f.lost != 0 || f.wrong != 0 || f.completed != f.tasks) rc = 4;
      if (rc != 0) break;
      const double cpu1000 = f.completed > 0 ? f.master_cpu_seconds / static_cast<double>(f.completed) * 1000 : 0;
      // The master's own memory per worker, apart from the input segments it shares with its
      // local children (the inputs in flight, which inline would sit in the workers' buffers).
      const auto own = [](std::uint64_t rss, std::uint64_t shmem) { return static_cast<double>(rss - std::min(rss, shmem)); };
      const double per_worker =
          std::max(0.0, own(f.master_rss_joined_bytes, f.master_shmem_joined_bytes) -
                            own(f.master_rss_at_start_bytes, f.master_shmem_at_start_bytes)) /
          workers;
      const double shm_per_worker =
          static_cast<double>(f.master_shmem_joined_bytes - std::min(f.master_shmem_joined_bytes, f.master_shmem_at_start_bytes)) /
          workers;
      if (rows.empty()) {
        ref_rate = f.rate();
        ref_cpu = cpu1000;
      }
      const auto [hb_in, hb_out] = heartbeat_bytes_per_s(workers, forwarders);
      const double load = load_average();
      sizes.push_back(workers);
      cpu_per_task.push_back(cpu1000);
      joins.push_back(f.join_seconds);
      rows.push_back({{"workers", workers}, {"forwarders", forwarders}, {"join_seconds", f.join_seconds},
                      {"tasks_per_s", f.rate()}, {"rate_relative_to_first", ref_rate > 0 ? f.rate() / ref_rate : 0.0},
                      {"master_cpu_seconds_per_1000_tasks", cpu1000},
                      {"cpu_relative_to_first", ref_cpu > 0 ? cpu1000 / ref_cpu : 0.0},
                      {"master_bytes_per_worker", per_worker}, {"master_shared_input_bytes_per_worker", shm_per_worker},
                      {"master_peak_rss_bytes", f.master_peak_rss_bytes},
                      {"heartbeat_bytes_per_s_in", hb_in}, {"heartbeat_bytes_per_s_out", hb_out}, {"loadavg_1min", load}});
      if (!o.json) {
        char line[300];
        std::snprintf(line, sizeof line, "%7u %6d %7u %8.2f %11.0f %12.3f %14.4f %12.3f %12.1f %12.1f %8.2f\n", buffer,
                      o.depth, workers, f.join_seconds, f.rate(), ref_rate > 0 ? f.rate() / ref_rate : 0.0, cpu1000,
                      ref_cpu > 0 ? cpu1000 / ref_cpu : 0.0, per_worker / 1024, shm_per_worker / 1024, load);
        out << line << std::flush;
      }
    }
    if (rc != 0) break;
    nlohmann::json s{{"buffer", buffer}, {"depth", o.depth}, {"sizes", rows}};
    if (sizes.size() >= 2) {
      s["exponent_cpu_per_task_vs_workers"] = fitted_exponent(sizes, cpu_per_task);
      curves.push_back({"buffer " + std::to_string(buffer) + ": master CPU seconds per 1,000 tasks", sizes, cpu_per_task,
                        fitted_exponent(sizes, cpu_per_task)});
      s["exponent_join_seconds_vs_workers"] = fitted_exponent(sizes, joins);
      if (!o.json) {
        char line[200];
        std::snprintf(line, sizeof line, "buffer %u: fitted exponent against workers: master CPU per task %.3f, join time %.3f\n",
                      buffer, s["exponent_cpu_per_task_vs_workers"].get<double>(), s["exponent_join_seconds_vs_workers"].get<double>());
        out << line << std::flush;
      }
    }
    series.push_back(s);
  }
  std::filesystem::remove_all(dir);
  if (rc != 0) {
    std::cerr << "bench workers: a run failed (code " << rc << ", 4: a task lost or wrong)\n";
    return rc;
  }
  if (!o.plot.empty() && !curves.empty()) {
    const std::string why_not = plot::write_scaling_plot(
        o.plot, {"treefarm bench workers: " + std::to_string(o.tasks) + " " + o.kernel + " tasks, depth " + std::to_string(o.depth),
                 "worker processes", "the master's CPU seconds per 1,000 tasks", curves, plot::this_command(),
                 plot::machine_line()});
    (o.json ? std::cerr : out) << (why_not.empty() ? "wrote " + o.plot : why_not) << "\n";
  }
  if (o.json)
    out << nlohmann::json{{"benchmark", "workers"}, {"kernel", o.kernel}, {"n", o.n}, {"tasks", o.tasks}, {"series", series}}.dump(1)
        << "\n";
  return 0;
}

}  // namespace treefarm::bench
