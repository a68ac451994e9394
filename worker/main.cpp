// treefarm-worker: joins a treefarm tree at any depth, computes on its own cores and
// serves its own children (docs/commands.md).
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/cli/EarlyChecks.hpp"
#include "runtime/process/Interrupt.hpp"
#include "tasks/BlasKernel.hpp"
#include "tasks/PayloadMemory.hpp"
#include "tasks/SandboxOptions.hpp"
#include "tasks/Benchmark.hpp"
#include "runtime/exec/CpuList.hpp"
#include "runtime/zmq/ZmqNode.hpp"
#include "runtime/exec/Topology.hpp"
#include "worker/AutoParent.hpp"

namespace {
std::atomic<treefarm::zmq_node::ZmqNode*> running{nullptr};
int stop_code_of(int sig) { return sig == SIGTERM ? treefarm::node::exit_ok : treefarm::node::exit_interrupted; }
// SIGTERM is a requested stop (exit 0); SIGINT an interruption (130). Either way the
// children are told and the parent gets Bye, so it re-queues this subtree's tasks at once.
// A signal before the node exists is kept (process::stop_requested()) and acted on then.
void on_signal(int sig) {
  treefarm::process::on_stop_signal(sig);
  if (auto* node = running.load()) node->stop(stop_code_of(sig));
}
}  // namespace

int main(int argc, char** argv) {
  treefarm::tasks::select_blas_kernel(argv);  // before anything loads BLAS kernels
  treefarm::tasks::keep_payload_memory();    // freed payloads reused, not unmapped (tasks/PayloadMemory.hpp)
  CLI::App app{"treefarm-worker: a node of a treefarm tree. It connects to its parent, computes tasks on its\n"
               "cores and forwards tasks to the workers that connect to it.\n"
               "Example: treefarm-worker --parent tcp://master-host:5555 --listen tcp://*:5556"};
  treefarm::node::NodeOptions opt;
  treefarm::zmq_node::Endpoints endpoints;
  treefarm::zmq_node::Compute compute;
  int cores = -1;
  std::string cpus;
  bool no_backfill = false;
  std::string log_level = "info";
  char host[256] = "worker";
  gethostname(host, sizeof host - 1);
  opt.name = std::string(host) + "-" + std::to_string(getpid());
  // This process's CPU seconds (every thread), sent up on the heartbeats for the root's
  // a-posteriori prediction (docs/live-model.md).
  // A command task's process counts once it has ended (RUSAGE_CHILDREN).
  opt.process_cpu_seconds = [] {
    double seconds = 0;
    for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage u{};
      if (::getrusage(who, &u) != 0) continue;
      seconds += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                 static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
    }
    return seconds;
  };
  app.add_option("parent,--parent", endpoints.parent,
                 "Endpoint of the parent (master or worker), tcp://HOST:PORT; also accepted without --parent "
                 "(as `dask worker tcp://host:8786`); `auto` with --join: choose the parent (docs/planning.md)")
      ->required();
  treefarm::worker::AutoParentOptions autop;
  app.add_option("--join", autop.join, "With --parent auto: endpoint of any node of the tree, tcp://HOST:PORT")
      ->check(treefarm::cli_support::endpoint_check());
  app.add_option("--advertise", endpoints.advertise, "This worker's listening endpoint as other machines reach it (told to --parent auto joiners; default: the bound one)")
      ->check(treefarm::cli_support::endpoint_check());
  app.add_option("--speed", autop.speed, "flop/s per core of this machine: checked against applications' min_speed (default: measured when an application has one) and, with --parent auto, used to predict (default there: the tree's median task times)")->check(treefarm::cli_support::non_negative_number());
  std::uint64_t memory = 0, disk = 0;
  app.add_option("--memory", memory, "bytes of memory this worker offers to tasks, checked against applications' memory_per_task (default: the machine's, from hwloc)");
  app.add_option("--disk", disk, "bytes of free disk this worker offers to tasks, checked against applications' disk_per_task (default: free bytes of the working directory's file system)");
  app.add_option("--probe-bytes", autop.probe_bytes, "With --parent auto: bytes per link probe to each node")->capture_default_str()->check(CLI::Range(std::uint64_t{1}, treefarm::net::max_tree_probe_bytes));
  double reparent_every = 0, reparent_gain = 0.1;
  app.add_option("--reparent-every", reparent_every, "seconds between re-evaluations of the parent: the tree is asked and measured again and this worker moves (leaving its parent cleanly) when another node predicts a fair throughput above (1 + --reparent-gain) x the current one (0 = never; docs/planning.md)")->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  app.add_option("--reparent-gain", reparent_gain, "With --reparent-every: the least relative gain that moves this worker (negative: move to the best other node every time, for tests)")->capture_default_str();
  app.add_option("--listen", endpoints.listen, "Endpoint for this worker's own children (\"\" = none)")
      ->capture_default_str()
      ->check(treefarm::cli_support::endpoint_check(true));
  app.add_option("--name", opt.name, "Unique node name (default HOSTNAME-PID)")->capture_default_str();
  app.add_option("--cores", cores, "Compute on this many cores (default: all usable or all of --cpus; 0 = only forward); fewer than the CPUs: on all of them, not pinned")
      ->check(CLI::Range(0, 65536));
  app.add_option("--cpus", cpus, "Compute on these CPUs, e.g. 0-1,3 (default: the affinity mask)");
  app.add_flag("--no-backfill", no_backfill, "Strict FIFO executor queue (no backfilling)");
  app.add_option("--ready-file", endpoints.ready_file, "Write the bound endpoint to this file once listening");
  app.add_option("--join-timeout", opt.join_timeout, "seconds to wait for the parent's Welcome")->capture_default_str()->check(treefarm::cli_support::positive_seconds());
  app.add_option("--rejoin-timeout", opt.rejoin_timeout, "seconds to keep rejoining a lost parent, or else one of its ancestors up to the master, counted from the loss, with back-off 0.5-8 s (0 = exit at once)")->capture_default_str()->check(treefarm::cli_support::non_negative_seconds());
  std::string curve_secret, authorized, parent_key;
  app.add_option("--curve-secret", curve_secret, "This worker's CURVE secret key file (treefarm keygen): encrypts and authenticates its links")->check(CLI::ExistingFile);
  app.add_option("--parent-key", parent_key, "The parent's CURVE public key file (NAME.key); with --parent auto, the --join node's")->check(CLI::ExistingFile);
  app.add_option("--authorized-keys", authorized, "Public keys of the workers admitted as children (authorized_keys file)")->check(CLI::ExistingFile);
  app.add_flag("--insecure", endpoints.insecure, "Allow unencrypted links on non-loopback addresses");
  app.add_option("--max-task-losses", opt.max_task_losses, "A task lost with this many dead children is reported failed")->capture_default_str();
  app.add_option("--heartbeat-interval", opt.heartbeat_interval, "seconds between heartbeats")->capture_default_str()->check(treefarm::cli_support::positive_seconds());
  app.add_option("--heartbeat-timeout", opt.heartbeat_timeout, "seconds of silence after which a peer is declared dead")->capture_default_str()->check(treefarm::cli_support::positive_seconds());
  treefarm::cli_support::add_one_port_window_option(app, opt.one_port_window);
  std::string migration = "off";
  app.add_option("--migration", migration, "Task migration (docs/migration.md): pull = when idle, take waiting tasks back from the child with the longest queue for the others (every node answers its parent's pulls); push = push waiting tasks to the parent when it reports idle requesters with a queue 2 or more shorter, and tell the children of this node's own")->capture_default_str()->check(CLI::IsMember({"off", "pull", "push"}));
  std::string balance = "off";
  app.add_option("--balance", balance, "Queue balancing over the migration (docs/migration.md, papers/lee2010 slide 17): tll = move waiting tasks while that lowers the total of the two ends' normalised loads (queued and running demand over capacity: cores, memory, disk), mll = the larger of them; off = the queue-length rule")->capture_default_str()->check(CLI::IsMember({"off", "tll", "mll"}));
  app.add_option("--task-deadline-factor", opt.task_deadline_factor, "A task a child holds past max(floor, FACTOR x expected seconds) is re-issued elsewhere (0 = never)")->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  app.add_option("--task-deadline-floor", opt.task_deadline_floor, "seconds: the least time a child is given for a task before it is re-issued")->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  app.add_option("--ack-timeout", opt.ack_timeout, "seconds a child may take to acknowledge a task transfer before it is dropped (0 = never)")->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  // Containment of command tasks (docs/command-tasks.md, "Containment").
  treefarm::tasks::SandboxOptions sandbox;
  app.add_option("--run-as", sandbox.run_as, "User that command tasks run as (default: nobody when this worker runs as root, else this worker's own user; root only when named)");
  app.add_option("--scratch", sandbox.scratch, "Folder under which each command task gets its own folder (default: $TMPDIR, else /tmp); the --run-as user must be able to reach it")->check(CLI::ExistingDirectory);
  app.add_option("--task-memory", sandbox.memory_bytes, "bytes of memory a command task may use when its application has no memory_per_task (0 = no limit)")->capture_default_str();
  app.add_option("--task-pids", sandbox.pids, "Processes and threads at most in one command task")->capture_default_str()->check(treefarm::cli_support::positive_number());
  app.add_option("--task-file-bytes", sandbox.file_bytes, "bytes: the largest file a command task may write, and the most standard output and error it may print, when its application has no disk_per_task")->capture_default_str()->check(treefarm::cli_support::positive_number());
  std::string cgroups = "auto";
  app.add_option("--cgroups", cgroups, "cgroups for command tasks: auto = v1 if its pids hierarchy is mounted, else v2; v1 or v2 = only that one; none = process-group kill and rlimits only (the fallback where cgroups are unavailable)")->capture_default_str()->check(CLI::IsMember({"auto", "v1", "v2", "none"}));
  namespace cs = treefarm::cli_support;
  cs::add_log_level_option(app, log_level);
  cs::setup_app(app, "treefarm-worker");
  if (const auto rc = cs::parse(app, argc, argv)) return *rc;
  opt.migration = *treefarm::core::migration_from_string(migration);
  opt.balance = *treefarm::core::balance_from_string(balance);
  cs::setup_logging(log_level);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  try {
    // Output paths before anything waits for the parent.
    if (!endpoints.ready_file.empty()) cs::check_out_file("--ready-file", endpoints.ready_file);
    using treefarm::tasks::CgroupChoice;
    sandbox.cgroups = cgroups == "v1" ? CgroupChoice::v1 : cgroups == "v2" ? CgroupChoice::v2
                      : cgroups == "none" ? CgroupChoice::none : CgroupChoice::automatic;
    try {
      treefarm::tasks::configure_sandbox(sandbox);
    } catch (const std::invalid_argument& e) {
      throw cs::UsageError(e.what());
    }
    const auto contained = treefarm::tasks::sandbox_settings();
    spdlog::info("{}: command tasks run as {} (uid {}) in their own folders under {}", opt.name, contained.user.name,
                 contained.user.uid, contained.scratch);
    if (opt.balance != treefarm::core::BalanceMode::off && opt.migration == treefarm::core::MigrationMode::off)
      throw cs::UsageError("--balance " + balance + ": queue balancing moves tasks by migration; give --migration pull or push too");
    const auto topo = treefarm::exec::discover_topology();
    std::vector<int> usable = topo.cores;
    if (!cpus.empty()) {
      usable = treefarm::exec::parse_cpu_list(cpus);
      for (int c : usable)
        if (std::find(topo.pus.begin(), topo.pus.end(), c) == topo.pus.end())
          throw cs::UsageError("--cpus: CPU " + std::to_string(c) + " is not usable by this process (usable: " +
                                      treefarm::exec::format_cpu_list(topo.pus) + ")");
    }
    if (cores >= 0) {
      if (static_cast<std::size_t>(cores) > usable.size())
        throw cs::UsageError("--cores " + std::to_string(cores) + ": only " + std::to_string(usable.size()) + " usable");
      // Fewer cores than CPUs: the CPUs are shared (with other nodes of this machine), and
      // the executor runs `cores` at a time anywhere on them rather than pinning each to one.
      if (cores > 0 && static_cast<std::size_t>(cores) < usable.size()) compute.shared_cpus = usable;
      usable.resize(static_cast<std::size_t>(cores));
    }
    compute.cores = usable;
    if (!compute.shared_cpus.empty())
      spdlog::info("{}: computes on {} core(s) of CPUs {}, shared: not pinned", opt.name, compute.cores.size(),
                   treefarm::exec::format_cpu_list(compute.shared_cpus));
    compute.memory = memory > 0 ? memory : topo.memory_bytes;
    opt.memory = compute.memory;
    opt.disk = disk;
    opt.speed = autop.speed;
    compute.backfill = !no_backfill;
    compute.speed_probe = treefarm::tasks::speed_per_core;  // `treefarm probe` asks for it
    if (!curve_secret.empty()) {
      if (parent_key.empty()) throw cs::UsageError("--curve-secret needs --parent-key (the parent's public key file)");
      endpoints.curve.enabled = true;
      endpoints.curve.own = cs::load_input([&] { return treefarm::net::load_secret_key_file(curve_secret); });
      endpoints.curve.parent_public_key = cs::load_input([&] { return treefarm::net::load_public_key_file(parent_key); });
      if (!authorized.empty()) {
        endpoints.curve.authorized = cs::load_input([&] { return treefarm::net::load_authorized_keys(authorized, &endpoints.curve.key_names, &endpoints.curve.key_roles); });
        endpoints.curve.authorized_file = authorized;
      }
      else endpoints.listen = "";  // nobody could be admitted: serve no children
    } else if (!parent_key.empty() || !authorized.empty()) {
      throw cs::UsageError("--parent-key and --authorized-keys need --curve-secret");
    }
    if (endpoints.parent == "auto") {
      if (autop.join.empty()) throw cs::UsageError("--parent auto needs --join tcp://ANY-NODE:PORT (a node of the tree)");
      if (endpoints.curve.enabled) {  // --parent-key is the --join node's key; the others' come with the answers
        autop.curve = endpoints.curve.own;
        autop.join_key = endpoints.curve.parent_public_key;
      }
      autop.name = opt.name;
      autop.cores = static_cast<std::uint32_t>(compute.cores.size());
      autop.cancel = &treefarm::process::stop_requested();  // Ctrl-C while asking the tree
      const auto found = treefarm::worker::find_parent(autop);
      spdlog::info("{}: --parent auto chose {} ({}) among {} nodes: predicted fair throughput {:.4g} tasks/s ({} LP solves)",
                   opt.name, found.parent.name, found.parent.endpoint, found.tree.model.nodes.size(),
                   found.parent.choice.fair_throughput, found.parent.choice.evaluations);
      endpoints.parent = found.parent.endpoint;
      if (endpoints.curve.enabled) endpoints.curve.parent_public_key = found.parent_key;
    } else if (!autop.join.empty()) {
      throw cs::UsageError("--join is for --parent auto");
    }
    treefarm::process::throw_if_stopped("interrupted before joining the tree");
    treefarm::zmq_node::ZmqNode node(opt, endpoints, compute);
    running = &node;
    if (treefarm::process::stop_requested()) node.stop(stop_code_of(treefarm::process::stop_signal()));
    const auto started = std::chrono::steady_clock::now();
    // Re-parenting later (docs/planning.md): a thread re-evaluates the parent every
    // --reparent-every seconds and asks the node's loop to move.
    std::atomic<bool> done{false};
    std::thread reparenter;
    if (reparent_every > 0) {
      autop.name = opt.name;
      autop.cores = static_cast<std::uint32_t>(compute.cores.size());
      if (endpoints.curve.enabled) autop.curve = endpoints.curve.own;
      reparenter = std::thread([&] {
        for (std::uint64_t round = 1; !done; ++round) {
          for (double slept = 0; slept < reparent_every && !done; slept += 0.1)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          const auto parent = node.parent();
          if (done || parent.endpoint.empty()) continue;
          treefarm::worker::AutoParentOptions o = autop;
          o.join = parent.endpoint;
          o.join_key = parent.public_key;
          o.leaving = opt.name;
          o.self_endpoint = endpoints.advertise.empty() ? node.endpoint() : endpoints.advertise;
          o.seed = autop.seed + round;
          o.cancel = &done;  // the run is over: its nodes may not answer, do not wait for them
          try {
            const auto r = treefarm::worker::evaluate_reparent(o, reparent_gain);
            spdlog::info("{}: re-parenting check: under '{}' {:.4g} tasks/s, best other '{}' {:.4g} tasks/s ({} LP solves, "
                         "{} nodes below this one counted): {}",
                         opt.name, r.current_parent, r.choice.current_throughput, r.target.name, r.choice.best_throughput,
                         r.choice.evaluations, r.subtree_nodes, r.choice.move ? "moving" : "staying");
            if (r.choice.move && !done) {
              // A voluntary move (docs/planning.md): the reason and the predicted gain, at info.
              spdlog::info("{}: re-parenting from '{}' to '{}': predicted fair throughput {:.4g} -> {:.4g} tasks/s ({}, "
                           "--reparent-gain {})",
                           opt.name, r.current_parent, r.target.name, r.choice.current_throughput,
                           r.choice.best_throughput,
                           r.choice.current && r.choice.current_throughput > 0 ? fmt::format("gain {:+.1f} %", 100 * (r.choice.best_throughput /
                                                                                      r.choice.current_throughput - 1))
                                            : std::string("the current parent could not be measured"),
                           reparent_gain);
              node.move_to(r.target);
            }
          } catch (const std::exception& e) {
            if (!done) spdlog::warn("{}: re-parenting check failed: {}", opt.name, e.what());
          }
        }
      });
    }
    const int rc = node.run();
    done = true;
    if (reparenter.joinable()) reparenter.join();
    running = nullptr;
    if (treefarm::process::stop_requested() && treefarm::process::stop_signal() == SIGINT) {
      // Interrupted in any phase (waiting for the parent too, where the node ends cleanly).
      std::cerr << cs::error_message("interrupted; this worker left the tree") << "\n";
      return treefarm::node::exit_interrupted;
    }
    if (rc == treefarm::node::exit_parent_lost) {
      const double tried = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::cerr << cs::error_message(fmt::format(
                       "could not reach or keep the parent at {}: tried for {:.1f} s (--join-timeout {} s, "
                       "--rejoin-timeout {} s); is a treefarm-master or treefarm-worker listening there?",
                       endpoints.parent, tried, opt.join_timeout, opt.rejoin_timeout))
                << "\n";
    }
    return rc;
  } catch (const std::exception& e) {
    if (treefarm::process::stop_requested()) {  // a signal ended the setup (--parent auto asking the tree)
      if (treefarm::process::stop_signal() == SIGTERM) return treefarm::node::exit_ok;
      return cs::report_error(treefarm::process::Interrupted("interrupted before joining the tree"));
    }
    return cs::report_error(e);
  }
}
