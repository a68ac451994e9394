#include "tools/bench/Scaling.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/model/Experiment.hpp"

namespace treefarm::bench {

double load_average() {
  std::ifstream f("/proc/loadavg");
  double one = -1;
  if (!(f >> one)) return -1;
  return one;
}

tools::ScratchDir scratch_dir(const std::string& what) { return tools::ScratchDir(what); }

TreeRunFigures run_tree(const std::filesystem::path& dir, const std::string& name, const std::string& experiment_toml,
                        tools::LaunchOptions options) {
  const auto exp_path = dir / (name + ".toml");
  std::ofstream(exp_path) << experiment_toml;
  const auto ex = model::load_experiment(exp_path.string());
  const auto out = dir / name;
  options.out_dir = out.string();
  options.quiet = true;
  options.log_level = "warn";
  options.master_args.push_back("--no-table");
  TreeRunFigures f;
  f.rc = tools::launch_benchmark_tree(ex, options, "the benchmark");
  const auto j = tools::read_tree_counts(out / "results.json", f);
  if (j.is_object() && j.contains("master_memory")) {
    const auto& m = j.at("master_memory");
    f.master_rss_at_start_bytes = m.value("rss_at_start_bytes", std::uint64_t{0});
    f.master_peak_rss_bytes = m.value("peak_rss_bytes", std::uint64_t{0});
    f.master_cpu_seconds = m.value("dispatch_cpu_seconds", 0.0);
    f.join_seconds = m.value("join_seconds", 0.0);
    f.master_rss_joined_bytes = m.value("rss_joined_bytes", std::uint64_t{0});
    f.master_shmem_at_start_bytes = m.value("rss_shmem_at_start_bytes", std::uint64_t{0});
    f.master_shmem_joined_bytes = m.value("rss_shmem_joined_bytes", std::uint64_t{0});
  }
  return f;
}

}  // namespace treefarm::bench
