#include "tools/TreeLauncher.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/process/ScratchDir.hpp"
#include "runtime/zmq/Curve.hpp"
#include "tools/Process.hpp"
#include "runtime/exec/CpuList.hpp"
#include "runtime/exec/Topology.hpp"

namespace treefarm::tools {

namespace fs = std::filesystem;

std::vector<std::string> worker_migration_args(const model::Experiment& ex, const LaunchOptions& options,
                                               const std::string& worker) {
  // An inner worker pulls from its own children only with --migration itself
  // (docs/migration.md); leaves have no one to pull from, but push to their parent.
  const std::string migration = options.migration.empty() ? core::to_string(ex.run.migration) : options.migration;
  const bool inner = std::any_of(ex.nodes.begin(), ex.nodes.end(), [&](const model::NodeSpec& n) { return n.parent == worker; });
  std::vector<std::string> args;
  const auto node = std::find_if(ex.nodes.begin(), ex.nodes.end(), [&](const model::NodeSpec& n) { return n.name == worker; });
  if (node != ex.nodes.end()) {  // declared resources (lee2010 slide 19; docs/migration.md, "Requirements")
    if (node->memory > 0) args.insert(args.end(), {"--memory", std::to_string(node->memory)});
    if (node->disk > 0) args.insert(args.end(), {"--disk", std::to_string(node->disk)});
    if (node->speed) args.insert(args.end(), {"--speed", std::to_string(*node->speed)});
  }
  if (migration == "off" || (migration != "push" && !inner)) return args;
  args.insert(args.end(), {"--migration", migration});
  const std::string balance = options.balance.empty() ? core::to_string(ex.run.balance) : options.balance;
  if (balance != "off") args.insert(args.end(), {"--balance", balance});
  return args;
}

namespace {
std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

/// Node i's Unix domain socket in the run's own folder (mode 0700: this user's processes
/// only), or tcp://127.0.0.1:* when the folder's path is too long for a socket address
/// (sun_path holds 108 bytes). Every process of the tree is on this machine.
std::string local_ipc_endpoint(const fs::path& dir, std::size_t i) {
  const fs::path socket = dir / (std::to_string(i) + ".sock");
  if (socket.string().size() > 100) return "tcp://127.0.0.1:*";
  return "ipc://" + socket.string();
}

std::string read_endpoint(const fs::path& file) {
  std::ifstream f(file);
  std::string ep;
  std::getline(f, ep);
  return ep;
}
}  // namespace

void check_fits_this_machine(const model::Experiment& ex, std::uint32_t buffer_override) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const double memory = static_cast<double>(pages) * static_cast<double>(page);
  const std::string machine = " bytes is more than this machine's memory (" + std::to_string(static_cast<std::uint64_t>(memory)) + " bytes)";
  double largest_input = 0;
  for (std::size_t k = 0; k < ex.apps.size(); ++k) {
    const auto& app = ex.apps[k];
    if (static_cast<double>(app.memory_per_task) > memory)
      throw model::FileError(ex.path, app.line, "app[" + std::to_string(k) + "].memory_per_task",
                             "application '" + app.name + "': " + std::to_string(app.memory_per_task) + machine);
    // An input above the frame limit is refused by the master with its file, line and
    // field (exit code 3); it does not count here.
    if (app.input_bytes() <= net::max_payload_bytes)
      largest_input = std::max(largest_input, static_cast<double>(app.input_bytes()));
  }
  const std::uint32_t buffer = buffer_override > 0 ? buffer_override : ex.run.buffer;
  const double held = static_cast<double>(buffer) * largest_input * static_cast<double>(ex.nodes.size());
  if (held <= memory) return;
  const std::string why = std::to_string(ex.nodes.size()) + " nodes each holding up to " + std::to_string(buffer) +
                          " inputs of " + std::to_string(static_cast<std::uint64_t>(largest_input)) + " bytes: " +
                          std::to_string(static_cast<std::uint64_t>(held)) + machine;
  // The option is a usage error (exit 2); the file's [run] buffer is bad input (exit 3).
  if (buffer_override > 0) throw cli_support::UsageError("--buffer " + std::to_string(buffer) + ": " + why);
  throw model::FileError(ex.path, 0, "run.buffer", std::to_string(buffer) + " tasks: " + why + "; lower it or give --buffer");
}

int launch_tree(const model::Experiment& ex, const LaunchOptions& options, const std::atomic<bool>& interrupted) {
  const std::string bin = options.bin_dir.empty() ? self_dir() : options.bin_dir;
  process::ScratchDir scratch("run");
  const fs::path tmp = scratch.path();
  const fs::path out = options.out_dir.empty() ? tmp : fs::path(options.out_dir);
  // The endpoint files and the run's CURVE keys live in `tmp`: removed when the run ends,
  // whatever the way. Without --out the results and logs went there too: then it is kept
  // only when it holds results.json (its path printed) or the logs of a failed run
  // (exit code 1 or 4, said on stderr).
  const auto finish = [&](int code) {
    std::error_code ec;
    for (std::size_t i = 0; i < ex.nodes.size(); ++i) fs::remove(tmp / (std::to_string(i) + ".sock"), ec);  // left by a killed node
    if (!options.out_dir.empty()) return code;
    if (fs::exists(tmp / "results.json", ec)) {
      scratch.keep();
      // stdout beside the table (stderr when stdout is JSON lines only).
      std::fprintf(options.json_progress ? stderr : stdout, "results: %s\n", (tmp / "results.json").c_str());
      std::fflush(stdout);
    } else if (code == 1 || code == 4) {
      scratch.keep();
      std::fprintf(stderr, "%s\n", cli_support::warning_message("the run's logs are kept in " + (tmp / "logs").string()).c_str());
    }
    return code;
  };
  const fs::path logs = out / "logs";
  fs::create_directories(logs);

  const auto topo = exec::discover_topology();
  auto cpus = assign_cpus(ex, topo.cores);
  if (options.cpus) {
    for (std::size_t i = 0; i < cpus.size(); ++i) cpus[i] = options.cpus(i);
  } else {
    // At info (stderr), once per placement in this process (a calibration's trees have the
    // run's placement): workers sharing the machine's CPUs are not pinned.
    static std::mutex said_mu;
    static std::string said;
    const std::lock_guard lock(said_mu);
    if (const auto note = shared_cpus_note(ex, cpus, topo.cores.size());
        !note.empty() && note != said &&
        (options.log_level == "info" || options.log_level == "debug" || options.log_level == "trace")) {
      std::fprintf(stderr, "treefarm: %s\n", note.c_str());
      said = note;
    }
    for (const auto& node : ex.nodes)  // said here, not only in the node's own log
      if (node.cpuset.empty() && node.cores > topo.cores.size())
        std::fprintf(stderr, "%s\n",
                     cli_support::warning_message(ex.path + ":" + std::to_string(node.line) + ": node '" + node.name +
                                                  "': cores = " + std::to_string(node.cores) + ", but this machine has " +
                                                  std::to_string(topo.cores.size()) + " usable CPUs: it computes on " +
                                                  std::to_string(topo.cores.size()))
                         .c_str());
  }
  const auto listen_of = [&](std::size_t i) {
    if (options.listen) return options.listen(i);
    if (!ex.nodes[i].listen.empty()) return ex.nodes[i].listen;
    return options.local_ipc ? local_ipc_endpoint(tmp, i) : std::string("tcp://127.0.0.1:*");
  };
  const auto wrapped = [&](std::size_t i, std::vector<std::string> args) {
    if (!options.wrap) return args;
    auto prefix = options.wrap(i);
    prefix.insert(prefix.end(), args.begin(), args.end());
    return prefix;
  };

  ProcessSet procs;
  std::vector<std::size_t> proc_of(ex.nodes.size(), SIZE_MAX);
  std::vector<std::string> endpoint(ex.nodes.size());
  const auto ready = [&](std::size_t i) { return tmp / (ex.nodes[i].name + ".endpoint"); };

  const fs::path keys = tmp / "keys";
  if (options.encrypt) {
    std::ofstream authorized((fs::create_directories(keys), keys / "authorized_keys"));
    for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
      const auto pair = net::generate_keypair();
      net::write_keypair(keys.string(), ex.nodes[i].name, pair);
      // Named node keys; the master's is not listed (docs/security.md, "Roles").
      if (i > 0) authorized << ex.nodes[i].name << " " << pair.public_key << " node\n";
    }
  }
  const auto key_args = [&](std::size_t i, std::vector<std::string>& args) {
    if (!options.encrypt) return;
    args.insert(args.end(), {"--curve-secret", (keys / (ex.nodes[i].name + ".key_secret")).string(), "--authorized-keys",
                             (keys / "authorized_keys").string()});
    if (i > 0) {
      args.push_back("--parent-key");
      args.push_back((keys / (ex.nodes[*ex.parent_index(i)].name + ".key")).string());
    }
  };

  std::vector<std::string> margs = {bin + "/treefarm-master", ex.path, "--ready-file", ready(0).string(), "--out",
                                    out.string(), "--log-level", options.log_level};
  margs.push_back("--listen");
  margs.push_back(listen_of(0));
  if (!options.policy.empty()) { margs.push_back("--policy"); margs.push_back(options.policy); }
  if (!options.migration.empty()) { margs.push_back("--migration"); margs.push_back(options.migration); }
  if (!options.balance.empty()) { margs.push_back("--balance"); margs.push_back(options.balance); }
  if (options.buffer) { margs.push_back("--buffer"); margs.push_back(std::to_string(options.buffer)); }
  if (!options.calibration.empty()) { margs.push_back("--calibration"); margs.push_back(options.calibration); }
  if (options.quiet) margs.push_back("--quiet");
  if (options.json_progress) margs.push_back("--json-progress");
  if (!cpus[0].cpus.empty()) { margs.push_back("--cpus"); margs.push_back(cpus[0].cpus); }
  for (const auto& a : options.master_args) margs.push_back(a);
  key_args(0, margs);
  proc_of[0] = procs.spawn(ex.nodes[0].name, wrapped(0, margs));

  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  const auto fail = [&](const std::string& why, int code) {
    std::fprintf(stderr, "%s\n", cli_support::error_message(why).c_str());
    procs.end_all();
    return finish(code);
  };

  // Start workers breadth-first (nodes are stored so), each once its parent listens.
  std::size_t next = 1;
  std::vector<std::vector<std::string>> argv_of(ex.nodes.size());
  std::mt19937_64 chaos_rng(options.chaos_seed);
  std::exponential_distribution<double> chaos_gap(options.chaos_interval > 0 ? 1.0 / options.chaos_interval : 1.0);
  double next_kill = -1;
  std::vector<double> restart_at(ex.nodes.size(), -1);
  std::vector<bool> killed_by_chaos(ex.nodes.size(), false);
  for (;;) {
    if (interrupted) return fail("interrupted; every process stopped", 130);
    if (options.timeout > 0 && elapsed() > options.timeout) return fail("--timeout " + fmt_seconds(options.timeout) + " s expired; every process stopped", 124);
    if (options.stop_when && next == ex.nodes.size() && options.stop_when()) {
      procs.end_all();
      return finish(0);
    }
    for (std::size_t i = next; i < ex.nodes.size(); ++i) {
      const auto parent = *ex.parent_index(i);
      if (endpoint[parent].empty() && fs::exists(ready(parent))) endpoint[parent] = read_endpoint(ready(parent));
    }
    if (endpoint[0].empty() && fs::exists(ready(0))) endpoint[0] = read_endpoint(ready(0));
    while (next < ex.nodes.size()) {
      const auto parent = *ex.parent_index(next);
      if (endpoint[parent].empty()) break;
      const auto& node = ex.nodes[next];
      const std::string parent_ep =
          options.parent_endpoint ? options.parent_endpoint(next, endpoint[parent]) : endpoint[parent];
      std::vector<std::string> args = {bin + "/treefarm-worker", "--parent", parent_ep, "--name", node.name,
                                       "--ready-file", ready(next).string(), "--log-level", options.log_level,
                                       "--listen", listen_of(next)};
      for (auto& a : cpus[next].worker_args()) args.push_back(std::move(a));
      for (auto& a : worker_migration_args(ex, options, node.name)) args.push_back(std::move(a));
      for (const auto& a : options.worker_args) args.push_back(a);
      key_args(next, args);
      argv_of[next] = args;
      proc_of[next] = procs.spawn(node.name, wrapped(next, args), (logs / (node.name + ".log")).string());
      ++next;
    }
    if (options.master_kill_at > 0 && elapsed() >= options.master_kill_at && procs.running(proc_of[0]))
      procs.signal(proc_of[0], SIGKILL);
    if (options.chaos_interval > 0 && next == ex.nodes.size() && ex.nodes.size() > 1) {
      if (next_kill < 0) next_kill = elapsed() + chaos_gap(chaos_rng);
      if (elapsed() >= next_kill) {
        next_kill = elapsed() + chaos_gap(chaos_rng);
        const std::size_t victim = 1 + chaos_rng() % (ex.nodes.size() - 1);
        if (procs.running(proc_of[victim]) && restart_at[victim] < 0) {
          procs.signal(proc_of[victim], SIGKILL);
          killed_by_chaos[victim] = true;
          restart_at[victim] = elapsed() + options.chaos_restart_delay;
          if (options.chaos_stats) ++options.chaos_stats->kills;
        }
      }
      for (std::size_t i = 1; i < ex.nodes.size(); ++i) {
        if (restart_at[i] < 0 || elapsed() < restart_at[i] || procs.running(proc_of[i])) continue;
        restart_at[i] = -1;
        // Same name, and the endpoint it had, so that its children find it again.
        auto args = argv_of[i];
        const auto bound = read_endpoint(ready(i));
        for (std::size_t a = 0; a + 1 < args.size(); ++a)
          if (args[a] == "--listen" && !bound.empty()) args[a + 1] = bound;
        proc_of[i] = procs.spawn(ex.nodes[i].name, wrapped(i, args), (logs / (ex.nodes[i].name + ".log")).string());
        if (options.chaos_stats) ++options.chaos_stats->restarts;
      }
    }
    for (auto i : procs.reap()) {
      const auto& p = procs.at(i);
      const auto node_of = std::find(proc_of.begin(), proc_of.end(), i);
      if (node_of != proc_of.end() && killed_by_chaos[static_cast<std::size_t>(node_of - proc_of.begin())]) {
        killed_by_chaos[static_cast<std::size_t>(node_of - proc_of.begin())] = false;
        continue;  // killed on purpose; restarted above
      }
      if (i == proc_of[0]) {
        // The master is done; the workers said Bye before it exited (docs/protocol.md) and
        // are exiting too. One shared deadline for all of them, then whoever is left is ended.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        for (std::size_t w = 1; w < procs.size(); ++w) {
          const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
          procs.wait(w, std::max(0.0, left));
        }
        procs.end_all();
        return finish(*p.exit_code);
      }
      if (*p.exit_code != 0) {
        // A worker that dies is the master's business: its tasks are re-queued and done
        // elsewhere (docs/fault-tolerance.md). Say so, and go on.
        std::string why = "worker '" + p.name + "' exited with code " + std::to_string(*p.exit_code);
        if (!p.log.empty()) why += "; its log (" + p.log + ") ends with:\n" + tail_file(p.log, 5);
        std::fprintf(stderr, "%s\n", cli_support::warning_message(why).c_str());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(next < ex.nodes.size() ? 5 : 50));
  }
}

nlohmann::json read_tree_counts(const std::filesystem::path& results, TreeRunCounts& counts) {
  std::ifstream rf(results);
  if (!rf) return nullptr;
  auto j = nlohmann::json::parse(rf);
  counts.duration = j.at("duration").get<double>();
  counts.lost = j.value("lost", std::uint64_t{0});
  counts.duplicates = j.value("duplicates", std::uint64_t{0});
  for (const auto& a : j.at("apps")) {
    counts.tasks += a.at("tasks").get<std::uint64_t>();
    counts.completed += a.at("completed").get<std::uint64_t>();
    counts.wrong += a.at("wrong").get<std::uint64_t>() + a.value("failed", std::uint64_t{0});
  }
  return j;
}

}  // namespace treefarm::tools
