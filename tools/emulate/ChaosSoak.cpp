#include "tools/emulate/ChaosSoak.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "runtime/model/Experiment.hpp"
#include "runtime/process/ScratchDir.hpp"
#include "tools/TreeLauncher.hpp"
#include "tools/emulate/Emulate.hpp"
#include "tools/emulate/FaultPlayer.hpp"
#include "tools/emulate/Platform.hpp"

namespace treefarm::emulate {

namespace fs = std::filesystem;

namespace {

std::string experiment_text(std::uint64_t mm_tasks) {
  std::ostringstream f;
  f << "[[node]]\nname = \"master\"\ncores = 0\n";
  for (const auto& [name, parent] : std::vector<std::pair<std::string, std::string>>{
           {"w1", "master"}, {"w2", "master"}, {"w1a", "w1"}, {"w1b", "w1"}, {"w2a", "w2"}})
    f << "[[node]]\nname = \"" << name << "\"\nparent = \"" << parent << "\"\ncores = 1\n";
  f << "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 256\ntasks = " << mm_tasks
    << "\n[[app]]\nname = \"ma\"\nkernel = \"matadd\"\nn = 256\nweight = 2\ntasks = " << 2 * mm_tasks << "\n[run]\nbuffer = 10\n";
  return f.str();
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The tmpfs under --out, in this process's own mount namespace: "full" leaves a few KiB
/// beyond what it holds, else 4 GiB.
void set_tmpfs_size(const fs::path& dir, bool full) {
  std::uint64_t bytes = 4ull << 30;
  if (full) {  // what it holds, unlinked files (the master's spill file) included
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) throw std::runtime_error("cannot statvfs " + dir.string());
    bytes = static_cast<std::uint64_t>(st.f_blocks - st.f_bfree) * st.f_frsize + 16 * 1024;
  }
  const std::string options = "size=" + std::to_string(bytes);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_REMOUNT, options.c_str()) != 0)
    throw std::runtime_error("cannot resize the tmpfs at " + dir.string() + ": " + std::strerror(errno));
}

}  // namespace

int chaos_soak(std::ostream& out, const SoakOptions& o, bool json, const std::atomic<bool>& interrupted,
               SoakFigures* figures) {
  if (::geteuid() != 0) throw EmulateError("the chaos soak needs root: network namespaces, nftables, a tmpfs");
  const process::ScratchDir scratch("soak");  // removed at the end, an error included
  const fs::path& dir = scratch.path();
  std::ostream& log = std::cerr;

  // A mount namespace of this process's own: the tmpfs under --out is seen by this process
  // and what it starts, never outside, and goes with it.
  bool disk_faults = ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
  const fs::path chaos_out = dir / "chaos";
  fs::create_directories(chaos_out);
  if (disk_faults && ::mount("tmpfs", chaos_out.c_str(), "tmpfs", 0, "size=4294967296,mode=0755") != 0) disk_faults = false;
  if (!disk_faults) log << "bench chaos: no private mount namespace here: no full-disk faults\n";

  const auto write_exp = [&](std::uint64_t mm_tasks) {
    const auto path = dir / ("chaos-" + std::to_string(mm_tasks) + ".toml");
    std::ofstream(path) << experiment_text(mm_tasks);
    return path;
  };
  auto ex = model::load_experiment(write_exp(500).string());
  Platform platform(ex, {}, &interrupted);
  const Platform& p = platform;
  tools::LaunchOptions lo;
  lo.bin_dir = o.bin_dir;
  lo.quiet = true;
  lo.log_level = "warn";
  lo.wrap = [&p, bin = o.bin_dir](std::size_t i) { return p.wrap(i, bin); };
  lo.listen = [&p](std::size_t i) { return p.listen_endpoint(i); };
  lo.parent_endpoint = [&p](std::size_t i, const std::string& bound) { return p.parent_endpoint(i, bound); };
  for (auto* args : {&lo.master_args, &lo.worker_args})
    args->insert(args->end(), {"--insecure", "--heartbeat-interval", "0.3", "--heartbeat-timeout", "2"});
  lo.master_args.push_back("--no-table");
  lo.worker_args.insert(lo.worker_args.end(), {"--rejoin-timeout", "600"});

  const auto run = [&](const fs::path& exp, const fs::path& out_dir, tools::LaunchOptions l) {
    l.out_dir = out_dir.string();
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = tools::launch_tree(model::load_experiment(exp.string()), l, interrupted);
    return std::pair{rc, since(t0)};
  };
  // Pilot: how many tasks make `minutes` minutes here.
  const auto [pilot_rc, pilot_s] = run(write_exp(500), dir / "pilot", lo);
  if (pilot_rc != 0) {
    out << "bench chaos: the pilot run failed with code " << pilot_rc << "\n";
    return pilot_rc;
  }
  // The run's own duration (results.json), not the wall time: the start of a tree would
  // weigh too much in a short pilot.
  double pilot_run_s = pilot_s;
  if (std::ifstream rf(dir / "pilot" / "results.json"); rf) pilot_run_s = nlohmann::json::parse(rf).value("duration", pilot_s);
  const auto mm_tasks = static_cast<std::uint64_t>(std::max(500.0, 500.0 * o.minutes * 60 / std::max(pilot_run_s, 0.1)));
  const auto exp = write_exp(mm_tasks);
  ex = model::load_experiment(exp.string());
  SoakFigures f;
  f.tasks = 3 * mm_tasks;
  log << "bench chaos: " << f.tasks << " tasks on 6 nodes in namespaces " << p.prefix() << "; the run without faults\n";
  const auto calm = run(exp, dir / "calm", lo);
  f.calm_seconds = calm.second;

  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> master_gap(1.0 / o.master_fault_interval), net_gap(1.0 / o.fault_interval);
  std::uniform_real_distribution<double> unit(0, 1);
  const auto t0 = std::chrono::steady_clock::now();
  int rc = 1;
  for (f.segments = 1; f.segments <= 200 && !interrupted; ++f.segments) {
    auto l = lo;
    l.chaos_interval = o.kill_interval;
    l.chaos_seed = rng();
    tools::LaunchOptions::ChaosStats kills;
    l.chaos_stats = &kills;
    if (f.segments > 1) l.master_args.push_back("--resume");
    // This segment's master fault, after an exponential time (at least 5 s of running).
    const double fault_at = 5 + master_gap(rng);
    const bool disk = disk_faults && f.segments % 2 == 0;  // master kill and full disk in turn
    if (!disk) l.master_kill_at = fault_at;
    // Network faults on random links, each 2 to 6 s, one per link at a time.
    std::vector<model::FaultSpec> faults;
    std::vector<double> link_free(ex.nodes.size(), 0);
    for (double t = net_gap(rng); t < 600; t += net_gap(rng)) {
      model::FaultSpec nf;
      const std::size_t node = 1 + rng() % (ex.nodes.size() - 1);
      nf.node = ex.nodes[node].name;
      nf.at = std::max(t, link_free[node]);
      nf.duration = 2 + 4 * unit(rng);
      link_free[node] = nf.at + nf.duration + 0.5;
      const double kind = unit(rng);
      nf.kind = kind < 1.0 / 3 ? model::FaultKind::loss : kind < 2.0 / 3 ? model::FaultKind::down : model::FaultKind::partition;
      nf.loss = 0.05;
      nf.where = "chaos";
      faults.push_back(nf);
    }
    std::stable_sort(faults.begin(), faults.end(), [](const auto& a, const auto& b) { return a.at < b.at; });
    std::ostringstream fault_log;
    FaultPlayer player(ex, faults, p, fault_log);
    std::atomic<bool> segment_over{false};
    std::thread filler;
    bool filled = false;
    if (disk)
      filler = std::thread([&] {
        const auto start = std::chrono::steady_clock::now();
        while (!segment_over && since(start) < fault_at) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (segment_over) return;
        set_tmpfs_size(chaos_out, true);
        filled = true;
      });
    player.start();
    const auto [segment_rc, seconds] = run(exp, chaos_out, l);
    segment_over = true;
    if (filler.joinable()) filler.join();
    player.stop();
    if (disk_faults) set_tmpfs_size(chaos_out, false);  // space freed for the resume
    f.worker_kills += kills.kills;
    f.network_faults += player.started();
    rc = segment_rc;
    log << "bench chaos: segment " << f.segments << ": " << seconds << " s, exit code " << rc << ", " << kills.kills
        << " worker kills, " << player.started() << " network faults";
    if (rc == 0) {
      log << "; done\n";
      break;
    }
    if (filled) {
      ++f.disk_full;
      log << ", --out filled up: resuming\n";
    } else if (!disk && seconds >= fault_at) {
      ++f.master_kills;
      log << ", master killed: resuming\n";
    } else {
      log << ": resuming\n";
    }
  }
  f.seconds = since(t0);
  f.exit_code = rc;
  if (std::ifstream rf(chaos_out / "results.json"); rf && rc == 0) {
    const auto j = nlohmann::json::parse(rf);
    f.lost = j.value("lost", std::uint64_t{0});
    f.duplicates = j.value("duplicates", std::uint64_t{0});
    for (const auto& a : j.at("apps")) {
      f.completed += a.at("completed").get<std::uint64_t>();
      f.wrong += a.at("wrong").get<std::uint64_t>() + a.value("failed", std::uint64_t{0});
    }
    std::set<std::pair<std::string, std::uint64_t>> seen;
    for (const auto& t : j.at("tasks")) seen.emplace(t.value("app", std::string()), t.at("id").get<std::uint64_t>());
    f.distinct = seen.size();
    if (j.at("tasks").size() != f.distinct) f.distinct = 0;  // a task recorded twice
  }
  const double calm_rate = f.calm_seconds > 0 ? static_cast<double>(f.tasks) / f.calm_seconds : 0;
  const double chaos_rate = f.seconds > 0 ? static_cast<double>(f.completed) / f.seconds : 0;
  if (json) {
    out << nlohmann::json{{"tasks", f.tasks},           {"completed", f.completed},       {"distinct", f.distinct},
                          {"lost", f.lost},             {"duplicates_dropped", f.duplicates}, {"wrong", f.wrong},
                          {"worker_kills", f.worker_kills}, {"network_faults", f.network_faults},
                          {"master_kills", f.master_kills}, {"disk_full", f.disk_full}, {"segments", f.segments},
                          {"seconds", f.seconds},       {"calm_seconds", f.calm_seconds},
                          {"chaos_tasks_per_s", chaos_rate}, {"calm_tasks_per_s", calm_rate},
                          {"throughput_ratio", calm_rate > 0 ? chaos_rate / calm_rate : 0.0}, {"exit_code", f.exit_code}}
               .dump(1)
        << "\n";
  } else {
    char line[768];
    std::snprintf(line, sizeof line,
                  "chaos soak: %llu tasks on 6 nodes (emulated platform %s), every fault at once\n"
                  "  worker kills %llu, network faults %llu (loss 5 %%, link down, partition; 2-6 s each), "
                  "master kills %llu, --out full %llu; %llu segments (a master fault, then --resume)\n"
                  "  tasks recorded %llu (exactly once: %llu distinct), lost %llu (must be 0), duplicates dropped %llu, "
                  "wrong or failed %llu (must be 0), exit code %d\n"
                  "  throughput %.1f tasks/s under chaos (%.0f s, restarts included), %.1f tasks/s without (%.0f s): "
                  "ratio %.3f\n",
                  static_cast<unsigned long long>(f.tasks), p.prefix().c_str(),
                  static_cast<unsigned long long>(f.worker_kills), static_cast<unsigned long long>(f.network_faults),
                  static_cast<unsigned long long>(f.master_kills), static_cast<unsigned long long>(f.disk_full),
                  static_cast<unsigned long long>(f.segments), static_cast<unsigned long long>(f.completed),
                  static_cast<unsigned long long>(f.distinct), static_cast<unsigned long long>(f.lost),
                  static_cast<unsigned long long>(f.duplicates), static_cast<unsigned long long>(f.wrong), f.exit_code,
                  chaos_rate, f.seconds, calm_rate, f.calm_seconds, calm_rate > 0 ? chaos_rate / calm_rate : 0.0);
    out << line;
  }
  if (figures) *figures = f;
  platform.teardown();
  if (disk_faults) ::umount2(chaos_out.c_str(), MNT_DETACH);
  return f.ok() ? 0 : 4;
}

}  // namespace treefarm::emulate
