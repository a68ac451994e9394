#include "tools/bench/TasksBench.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/model/Application.hpp"
#include "runtime/net/Codec.hpp"
#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"
#include "tools/bench/Scaling.hpp"
#include "tools/bench/TransportCeiling.hpp"

namespace treefarm::bench {

namespace {

std::string tree_toml(const std::string& app_lines, std::uint64_t tasks, std::uint32_t buffer) {
  std::ostringstream f;
  f << "[[node]]\nname = \"master\"\ncores = 0\n\n";
  for (const char* w : {"w1", "w2"}) f << "[[node]]\nname = \"" << w << "\"\nparent = \"master\"\ncores = 1\n\n";
  f << "[[app]]\nname = \"tiny\"\n" << app_lines << "tasks = " << tasks << "\n\n[run]\nbuffer = " << buffer << "\n";
  return f.str();
}

/// tasks/s of run_task called in a loop on this thread for about `seconds`.
double kernel_alone_rate(const model::AppSpec& app, double seconds) {
  std::vector<std::byte> input;
  tasks::fill_input(app, 1, 0, 0, input);
  double sink = 0;
  std::uint64_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 256; ++i) sink += tasks::run_task(app, input, nullptr);
    done += 256;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (sink == 12345.678) std::cerr << "";  // keeps the loop
  return static_cast<double>(done) / elapsed;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

}  // namespace

int bench_tasks(std::ostream& out, const TasksBenchOptions& o) {
  if (o.kernel != "matmul" && o.kernel != "matadd")
    throw std::invalid_argument("bench tasks: --kernel must be matmul or matadd, not '" + o.kernel + "'");
  if (o.n == 0) throw std::invalid_argument("bench tasks: --n must be at least 1");
  if (o.tasks.empty()) throw std::invalid_argument("bench tasks: --tasks needs at least one size");
  if (o.ceiling_frames != "batch" && o.ceiling_frames != "task")
    throw std::invalid_argument("bench tasks: --ceiling-frames must be batch or task, not '" + o.ceiling_frames + "'");
  if (o.rounds < 1) throw std::invalid_argument("bench tasks: --rounds must be at least 1");
  model::AppSpec app;
  app.name = "tiny";
  app.kernel = o.kernel == "matmul" ? model::Kernel::matmul : model::Kernel::matadd;
  app.n = o.n;
  const double alone = kernel_alone_rate(app, 0.3);
  const auto dir = scratch_dir("bench-tasks");
  tools::LaunchOptions lo;
  lo.master_args = {"--inputs", o.inputs};
  nlohmann::json rows = nlohmann::json::array();
  std::vector<double> sizes, kernel_seconds, noop_seconds;
  TransportCeilingOptions ceiling;
  ceiling.input_bytes = app.input_bytes();
  // A kernel task's result travels up as its entry in a batch frame: a header (u32 length,
  // docs/protocol.md "Batch") and the encoded Result (its checksum and timings, no output).
  net::msg::Result sample;
  sample.task_id = o.tasks.empty() ? 0 : o.tasks.back();
  sample.node = "w1";
  ceiling.result_bytes = sizeof(std::uint32_t) + net::encode(net::Message{sample}).size();
  ceiling.buffer = o.buffer;
  ceiling.frame_per_task = o.ceiling_frames == "task";
  TransportCeilingOptions ipc_ceiling = ceiling;
  ipc_ceiling.ipc = true;
  int rc = 0;
  for (const auto tasks : o.tasks) {
    std::vector<double> kernel_rates, noop_rates, ceiling_rates, ipc_rates;
    ceiling.tasks = ipc_ceiling.tasks = tasks;
    double kernel_wall = 0, noop_wall = 0;
    for (int r = 0; r < o.rounds && rc == 0; ++r) {
      const std::string tag = std::to_string(tasks) + "-" + std::to_string(r);
      const auto k = run_tree(dir, "kernel-" + tag,
                              tree_toml("kernel = \"" + o.kernel + "\"\nn = " + std::to_string(o.n) + "\n", tasks, o.buffer), lo);
      const auto z = run_tree(dir, "noop-" + tag, tree_toml("kernel = \"noop\"\nbytes = 16\n", tasks, o.buffer), lo);
      for (const auto* f : {&k, &z}) {
        if (f->rc != 0) rc = f->rc;
        else if (f->lost != 0 || f->wrong != 0 || f->completed != f->tasks) rc = 4;
      }
      if (rc != 0) break;
      ceiling_rates.push_back(transport_ceiling(ceiling));
      ipc_rates.push_back(transport_ceiling(ipc_ceiling));
      kernel_rates.push_back(k.rate());
      noop_rates.push_back(z.rate());
      kernel_wall += k.duration;
      noop_wall += z.duration;
    }
    if (rc != 0) break;
    const double kr = mean(kernel_rates), nr = mean(noop_rates), cr = mean(ceiling_rates), ir = mean(ipc_rates), load = load_average();
    sizes.push_back(static_cast<double>(tasks));
    kernel_seconds.push_back(kernel_wall / o.rounds);
    noop_seconds.push_back(noop_wall / o.rounds);
    rows.push_back({{"tasks", tasks}, {"tasks_per_s", kr}, {"noop_tasks_per_s", nr}, {"ratio_to_noop", nr > 0 ? kr / nr : 0.0},
                    {"runs_tasks_per_s", kernel_rates}, {"noop_runs_tasks_per_s", noop_rates},
                    {"transport_ceiling_tasks_per_s", cr}, {"transport_runs_tasks_per_s", ceiling_rates},
                    {"ceiling_ratio_to_noop", nr > 0 ? cr / nr : 0.0}, {"ipc_ceiling_tasks_per_s", ir},
                    {"ipc_ceiling_ratio_to_noop", nr > 0 ? ir / nr : 0.0},
                    {"ipc_runs_tasks_per_s", ipc_rates}, {"loadavg_1min", load}});
    if (!o.json) {
      char line[700];
      std::snprintf(line, sizeof line,
                    "%s n=%u, %llu tasks, master -> 2 one-core workers, buffer %u: %.0f tasks/s; no-op (16 bytes) "
                    "same tree: %.0f tasks/s; ratio %.3f (load average %.2f)\n"
                    "  raw ZeroMQ, the same bytes (%zu down, %zu up per task, %s), master -> 2 worker processes, "
                    "no kernel: tcp %.0f tasks/s (%.3f of the no-op rate); ipc, the tree's transport, %.0f tasks/s (%.3f)\n",
                    o.kernel.c_str(), o.n, static_cast<unsigned long long>(tasks), o.buffer, kr, nr, nr > 0 ? kr / nr : 0.0,
                    load, ceiling.input_bytes, ceiling.result_bytes,
                    ceiling.frame_per_task ? "a frame per task" : "a frame per batch", cr, nr > 0 ? cr / nr : 0.0, ir, nr > 0 ? ir / nr : 0.0);
      out << line << std::flush;
    }
  }
  std::filesystem::remove_all(dir);
  if (rc != 0) {
    std::cerr << "bench tasks: a run failed (code " << rc << ", 4: a task lost or wrong)\n";
    return rc;
  }
  nlohmann::json j{{"benchmark", "tasks"}, {"kernel", o.kernel}, {"n", o.n}, {"workers", 2}, {"buffer", o.buffer},
                   {"inputs", o.inputs}, {"rounds", o.rounds}, {"ceiling_frames", o.ceiling_frames}, {"kernel_alone_tasks_per_s", alone}, {"sizes", rows}};
  if (sizes.size() >= 2) {
    j["exponent_seconds_vs_tasks"] = fitted_exponent(sizes, kernel_seconds);
    j["noop_exponent_seconds_vs_tasks"] = fitted_exponent(sizes, noop_seconds);
  }
  if (o.json) {
    out << j.dump(1) << "\n";
    return 0;
  }
  char line[300];
  std::snprintf(line, sizeof line, "kernel alone, one thread of this process, checksum included: %.0f tasks/s\n", alone);
  out << line;
  if (sizes.size() >= 2) {
    std::snprintf(line, sizeof line, "fitted exponent of run time against tasks: %s %.3f, no-op %.3f (1 = constant cost per task)\n",
                  o.kernel.c_str(), j["exponent_seconds_vs_tasks"].get<double>(), j["noop_exponent_seconds_vs_tasks"].get<double>());
    out << line;
  }
  return 0;
}

}  // namespace treefarm::bench
