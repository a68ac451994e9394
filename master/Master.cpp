#include "master/Master.hpp"
#include "runtime/metrics/Progress.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <unordered_map>
#include <unordered_set>
#include <ctime>
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>

#include <spdlog/spdlog.h>

#include "runtime/metrics/Journal.hpp"
#include "runtime/metrics/ProcessMemory.hpp"
#include "runtime/metrics/TaskLog.hpp"
#include "runtime/cli/CliSupport.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "tasks/Benchmark.hpp"
#include "tasks/BlasKernel.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/net/Codec.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/model/Origins.hpp"
#include "tasks/Checksum.hpp"
#include "tasks/CommandTask.hpp"
#include "tasks/Payload.hpp"
#include "tasks/InputPrefetcher.hpp"
#include "tasks/RunSecret.hpp"
#include "tasks/TaskRunner.hpp"
#include "runtime/zmq/ZmqNode.hpp"
#include "runtime/exec/Topology.hpp"
#include "runtime/core/MigrationOptions.hpp"
#include "runtime/node/TaskMap.hpp"

namespace treefarm::master {

using metrics::Journal;
using metrics::JournalEntry;
using metrics::Progress;
using metrics::journal_fingerprint;
using metrics::load_journal;

namespace {
std::atomic<zmq_node::ZmqNode*> running{nullptr};
std::atomic<bool> stop_requested{false};
}

namespace {
/// The running experiment's progress for `treefarm status` (MasterOptions::on_status).
nlohmann::json status_json(const metrics::RunResults& results, const std::vector<std::uint64_t>& per_app,
                           const std::unordered_map<std::string, std::uint64_t>& done_by_node,
                           const std::unordered_map<std::string, net::msg::NodeLoad>& load_by_node, double elapsed) {
  nlohmann::json apps = nlohmann::json::array(), nodes = nlohmann::json::array();
  for (std::size_t k = 0; k < results.apps.size() && k < per_app.size(); ++k) {
    const auto& a = results.apps[k];
    apps.push_back({{"name", a.name},
                    {"tasks", a.tasks},
                    {"done", per_app[k]},
                    {"throughput", elapsed > 0 ? static_cast<double>(per_app[k]) / elapsed : 0.0},
                    {"predicted", a.predicted ? nlohmann::json(*a.predicted) : nlohmann::json()}});
  }
  for (const auto& n : results.nodes) {
    const auto it = done_by_node.find(n.name);
    nodes.push_back({{"name", n.name}, {"parent", n.parent}, {"cores", n.cores},
                     {"done", it == done_by_node.end() ? std::uint64_t{0} : it->second}});
    // Its state as its last heartbeat brought it up (issue 20): busy cores, tasks held and
    // not running, the machine's 1-minute load average (null: unknown).
    if (const auto l = load_by_node.find(n.name); l != load_by_node.end()) {
      nodes.back()["busy_cores"] = l->second.busy_cores;
      nodes.back()["queued"] = l->second.queued;
      nodes.back()["load1"] = l->second.load1 >= 0 ? nlohmann::json(l->second.load1) : nlohmann::json();
    }
  }
  return {{"elapsed", elapsed}, {"apps", apps}, {"nodes", nodes}};
}
}  // namespace

void stop_master() {
  stop_requested = true;
  if (auto* node = running.load()) node->stop();
}

int run_master(const MasterOptions& options) {
  // Memory before anything per task exists (issue 14: bytes per task, `treefarm bench memory`).
  const metrics::ProcessMemory memory_at_start = metrics::process_memory();
  std::unique_ptr<Journal> journal;
  std::vector<std::vector<bool>> resumed;  // per app: done in an earlier run
  double time_offset = 0;                  // seconds: resumed completions continue the journal's timeline
  model::Experiment ex = model::load_experiment(options.experiment);
  // A calibration is of the tree as the file declares it (its nodes' parents), before any re-rooting.
  std::optional<model::Experiment> declared;
  if (options.origin.empty()) {
    model::require_root_origins(ex, "treefarm-master");  // several masters: one per origin, --origin
  } else {
    declared = ex;
    ex = model::rerooted(ex, options.origin);  // bertin2008 §2.2: this origin's applications, its tree
  }
  if (!options.policy.empty()) ex.run.policy = options.policy;
  if (options.buffer) ex.run.buffer = *options.buffer;
  ex.run.one_port_window = options.one_port_window;
  try {
    core::apply_migration_options(ex.run.migration, ex.run.balance, options.migration, options.balance);
  } catch (const std::invalid_argument& e) {
    throw cli_support::UsageError(e.what());  // exit 2, as for any bad option
  }
  for (std::size_t k = 0; k < ex.apps.size(); ++k) {
    const auto& app = ex.apps[k];
    const std::string field = "app[" + std::to_string(k) + "]";
    if (app.kernel == model::Kernel::abstract)
      throw model::FileError(ex.path, app.line, field + ".kernel",
                             "application '" + app.name +
                                 "' is abstract (bytes and flops only): it can be predicted and simulated, not run");
    // One task's input travels in one frame (docs/protocol.md): refuse at start what could not be sent.
    if (app.input_bytes() > net::max_payload_bytes)
      throw model::FileError(ex.path, app.line, field + (app.kernel == model::Kernel::matmul || app.kernel == model::Kernel::matadd ? ".n" : ".bytes"),
                             "a task's input is " + std::to_string(app.input_bytes()) + " bytes, above the " +
                                 std::to_string(net::max_payload_bytes) + "-byte frame limit; use a smaller size");
  }
  const auto& master_node = ex.nodes.at(0);
  const bool calibrating = !options.calibrate_out.empty();
  // Refuse an unwritable --out before anything starts (issue 13, hole 9).
  if (!options.out_dir.empty()) metrics::check_writable_directory(options.out_dir);
  if (options.resume && options.out_dir.empty())
    throw std::invalid_argument("--resume continues the journal in the --out directory: give --out DIR");
  if (options.resume && calibrating) throw std::invalid_argument("--resume does not apply to a calibration run");
  // Output files (docs/command-tasks.md): each task's output is written under OUT/outputs/APP/.
  for (std::size_t k = 0; k < ex.apps.size() && !calibrating; ++k)
    if (ex.apps[k].send_output && options.out_dir.empty())
      throw model::FileError(ex.path, ex.apps[k].line, "app[" + std::to_string(k) + "].output_file",
                             "the outputs are written under OUT/outputs/" + ex.apps[k].name + "/: give --out DIR");

  if (!(options.spot_check >= 0 && options.spot_check <= 1))
    throw std::invalid_argument("--spot-check " + std::to_string(options.spot_check) + ": expected a fraction in [0, 1]");
  // Unforgeable results (issue 13, hole 4; docs/security.md): every task's input comes from
  // a per-run secret the workers never see, and a secret fraction of results is recomputed.
  const tasks::RunSecret secret = tasks::RunSecret::random();
  // Inputs are generated ahead on a thread of their own (tasks/InputPrefetcher.hpp): on
  // the loop thread they stalled dispatch (issue 13's inputs, found on the quickstart).
  // With --inputs pooled (trusted trees) task i of an application reuses input i mod 2 of a
  // pool made once from the same secret: no generation and no fresh bytes per task.
  constexpr std::uint64_t pool_size = 2;
  const auto seed_index = [&](std::uint64_t index) { return options.pooled_inputs ? index % pool_size : index; };
  std::optional<tasks::InputPrefetcher> inputs;
  std::vector<std::vector<tasks::InputBuffer>> pool(ex.apps.size());
  const auto make_input = [&](std::uint32_t app, std::uint64_t index) {
    auto bytes = std::make_shared<std::vector<std::byte>>();
    tasks::fill_input(ex.apps.at(app), secret.input_seed(app, seed_index(index)), app, 0, *bytes);
    return tasks::InputBuffer(std::move(bytes));
  };
  if (options.pooled_inputs) {
    for (std::uint32_t k = 0; k < ex.apps.size(); ++k)
      if (ex.apps[k].kernel != model::Kernel::command)
        for (std::uint64_t j = 0; j < pool_size; ++j) pool[k].push_back(make_input(k, j));
  } else {
    inputs.emplace(ex.apps, [&secret](std::uint32_t app, std::uint64_t index) { return secret.input_seed(app, index); });
  }
  // Small inputs of the fixed-size kernels (no-op tasks, tiny matrices) are made in slabs
  // of up to 256 inputs (64 KiB) to an allocation (node::SmallPayloads; issue 14: no
  // allocation per task): three per task before (buffer, its vector, the payload).
  constexpr std::size_t slab_max_input_bytes = 4096, slab_bytes = std::size_t{64} << 10;
  std::vector<std::optional<node::SmallPayloads>> small_inputs(ex.apps.size());
  for (std::size_t k = 0; k < ex.apps.size() && inputs; ++k) {
    const std::size_t bytes = ex.apps[k].input_bytes();
    if (tasks::has_fixed_input(ex.apps[k]) && bytes > 0 && bytes <= slab_max_input_bytes)
      small_inputs[k].emplace(bytes, std::min<std::size_t>(256, slab_bytes / bytes));
  }
  // A spot check regenerates the input it recomputes (it left the master long ago).
  const auto regenerate_input = [&](core::TaskId id) { return make_input(id.app().value, id.index()); };

  metrics::RunResults results = metrics::empty_results(ex);
  // Per-task records go to a compact spill file, not memory (issue 14; TaskLog.hpp).
  const auto task_log = std::make_shared<metrics::TaskLog>(calibrating ? std::string() : options.out_dir);
  results.task_log = task_log;
  // The header of results.json: what is needed to reproduce the run (issue 18).
  results.treefarm_version = cli_support::version();
  results.experiment_text = model::read_input_file(options.experiment);
  {
    const auto topo = exec::discover_topology();
    results.host = exec::to_json(topo);
    char host[256] = "";
    ::gethostname(host, sizeof host - 1);
    results.host["hostname"] = host;
    results.host["blas"] = tasks::to_json(tasks::blas_info());
  }
  results.settings = {{"policy", ex.run.policy},
                      {"buffer", ex.run.buffer},
                      {"epsilon", ex.run.epsilon},
                      {"seed", ex.run.seed},
                      {"inputs", options.pooled_inputs ? "pooled" : "secret"},
                      {"comm_model", ex.run.comm_model == model::CommModel::one_port ? "one-port" : "multi-port"},
                      {"migration", core::to_string(ex.run.migration)},
                      {"balance", core::to_string(ex.run.balance)},
                      {"one_port_window", ex.run.one_port_window},
                      {"listen", options.listen},
                      {"wait_for_nodes", options.wait_for_nodes.value_or(ex.nodes.size() - 1)},
                      {"wait_timeout", options.wait_timeout},
                      {"calibration", options.calibration},
                      {"encrypted", options.curve.enabled},
                      {"insecure", options.insecure},
                      {"heartbeat_interval", options.heartbeat_interval},
                      {"heartbeat_timeout", options.heartbeat_timeout},
                      {"max_task_losses", options.max_task_losses}};

  // Journal and resume (issue 13, hole 8; docs/fault-tolerance.md).
  std::vector<std::uint64_t> app_tasks;
  {
    std::vector<std::string> names, kernels;
    for (const auto& app : ex.apps) {
      names.push_back(app.name);
      kernels.emplace_back(model::to_string(app.kernel));
      app_tasks.push_back(app.tasks);
    }
    const auto fingerprint = journal_fingerprint(ex.run.seed, names, kernels, app_tasks);
    std::unique_ptr<Journal> opened;
    if (!options.out_dir.empty() && !calibrating) {
      const auto path = std::filesystem::path(options.out_dir) / "journal.tsv";
      const bool have = options.resume && std::filesystem::exists(path);
      std::vector<JournalEntry> before;
      if (have) before = load_journal(path, fingerprint, app_tasks);
      else if (options.resume) spdlog::warn("master: --resume: no journal at {}, starting from scratch", path.string());
      opened = std::make_unique<Journal>(path, fingerprint, have);
      if (!before.empty()) {
        resumed.assign(ex.apps.size(), {});
        for (std::size_t k = 0; k < ex.apps.size(); ++k) resumed[k].assign(ex.apps[k].tasks, false);
        for (const auto& e : before) {
          resumed[e.app][e.index] = true;
          task_log->add(metrics::PackedTaskRecord{e.index, e.app, task_log->intern(e.node), e.completed_at,
                                                  e.compute_seconds, -1.0, 0.0f, metrics::PackedTaskRecord::no_via});
          time_offset = std::max(time_offset, e.completed_at);
        }
        spdlog::info("master: resuming {}: {} of {} tasks already done", path.string(), before.size(),
                     ex.total_tasks());
      }
    }
    journal = std::move(opened);
  }

  node::NodeOptions node_options;
  node_options.name = master_node.name;
  node_options.heartbeat_interval = options.heartbeat_interval;
  node_options.heartbeat_timeout = options.heartbeat_timeout;
  node_options.max_task_losses = options.max_task_losses;
  node_options.task_deadline_factor = options.task_deadline_factor;
  node_options.task_deadline_floor = options.task_deadline_floor;
  node_options.migration = ex.run.migration;  // lee2010 PULL (docs/migration.md)
  node_options.balance = ex.run.balance;      // lee2010 slide 17
  node_options.memory = master_node.memory;   // declared resources override the detected ones
  node_options.disk = master_node.disk;
  node_options.speed = master_node.speed.value_or(0.0);
  node_options.one_port_window = ex.run.one_port_window;
  node_options.ack_timeout = options.ack_timeout;
  zmq_node::Endpoints endpoints;
  endpoints.listen = options.listen;
  endpoints.ready_file = options.ready_file;
  endpoints.curve = options.curve;
  endpoints.insecure = options.insecure;
  zmq_node::Compute compute;
  if (options.cores) {
    compute.cores = *options.cores;
  } else if (master_node.cores > 0 && !options.live) {  // a served root computes on its --cpus only
    compute.cores = exec::restrict_cores(exec::discover_topology(), master_node.cores);
  }
  results.nodes.push_back(metrics::NodeResult{master_node.name, "", static_cast<std::uint32_t>(compute.cores.size()), 0});
  compute.speed_probe = tasks::speed_per_core;  // `treefarm probe` measures the master too

  node::RootSetup root;
  root.welcome.buffer = ex.run.buffer;
  root.welcome.policy = ex.run.policy;
  if (auto it = ex.run.policy_options.find(ex.run.policy); it != ex.run.policy_options.end())
    root.policy_options = it->second;
  root.welcome.one_port = ex.run.comm_model == model::CommModel::one_port;
  for (const auto& app : ex.apps) root.welcome.apps.push_back(node::app_to_wire(app));
  root.apps = ex.apps;
  root.wait_for_nodes = options.wait_for_nodes.value_or(ex.nodes.size() - 1);
  root.wait_timeout = options.wait_timeout;
  root.done_before = resumed;
  // Dispatch times (results.json): the root hands a task out through this callback; its
  // time is taken on the master's steady clock relative to the start of dispatching.
  std::chrono::steady_clock::time_point steady_start{};
  std::vector<std::vector<double>> dispatched(ex.apps.size());
  for (std::size_t k = 0; k < ex.apps.size(); ++k) dispatched[k].assign(ex.apps[k].tasks, -1.0);
  // Generated when sent (and again if re-sent): one buffer per task in flight, shared.
  root.payload = [&](core::TaskId id) {
    const auto k = id.app().value;
    if (k < dispatched.size() && id.index() < dispatched[k].size())
      dispatched[k][id.index()] = std::chrono::duration<double>(std::chrono::steady_clock::now() - steady_start).count();
    if (!pool[k].empty()) return node::share(pool[k][id.index() % pool_size]);
    if (!inputs) return node::share(make_input(k, id.index()));
    if (small_inputs[k])
      return small_inputs[k]->make([&](std::span<std::byte> out) { inputs->fill(k, id.index(), out); });
    return node::share(inputs->get(id.app().value, id.index()));
  };
  double start = 0;
  std::uint64_t done = results.task_count();
  const std::uint64_t total = ex.total_tasks();
  std::vector<std::uint64_t> per_app(ex.apps.size(), 0);
  results.for_each_task([&](const metrics::TaskView& t) { ++per_app[t.app]; });  // resumed: the journal's tasks count
  root.on_start = [&](double now) {
    start = now;
    steady_start = std::chrono::steady_clock::now();
    const std::time_t wall = std::time(nullptr);
    char iso[32];
    std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&wall));
    results.started_utc = iso;
    spdlog::info("master: starting {} tasks with policy {} ({} nodes joined)", total, ex.run.policy,
                 results.nodes.size() - 1);
  };
  // Spot checks: a secret fraction of the children's results recomputed here. A wrong one
  // convicts the child it came through: everything recorded from it is redone.
  // task -> child (task_log's name id), until recorded; the log keeps the child of each record.
  node::IdMap<std::uint32_t> arriving_via;  // open addressing: no allocation per task (issue 14)
  std::uint64_t checked = 0, from_children = 0, convicted = 0, redone = 0;
  double check_seconds = 0;
  root.check_result = [&](const net::msg::Result& r, const std::string& via) {
    node::ResultVerdict verdict;
    const core::TaskId id{r.task_id};
    const std::uint32_t k = id.app().value;
    ++from_children;
    // A command is re-run here only if the experiment says it is deterministic (issue 20).
    const bool checkable = ex.apps[k].kernel != model::Kernel::command || ex.apps[k].spot_check;
    if (!r.failed && checkable && secret.spot_checked(k, id.index(), options.spot_check)) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto input = regenerate_input(id);
      double expected = 0;
      try {
        expected = tasks::run_task(ex.apps[k], *input, nullptr, id.index());
      } catch (const std::exception& e) {  // a command that fails here proves nothing about the child
        spdlog::warn("master: spot check of task {} of '{}' could not run here: {}", id.index(), ex.apps[k].name, e.what());
        arriving_via[r.task_id] = task_log->intern(via);
        return verdict;
      }
      check_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++checked;
      if (!tasks::checksum_matches(expected, r.checksum, ex.apps[k])) {
        verdict.forged = true;  // the driver finds the forger below `via` and calls root.convict
        spdlog::error("master: spot check caught child '{}' passing a forged result (task {} of '{}', node '{}', "
                      "checksum {} instead of {})",
                      via, id.index(), ex.apps[k].name, r.node, r.checksum, expected);
        return verdict;
      }
    }
    arriving_via[r.task_id] = task_log->intern(via);
    return verdict;
  };
  // Issue 13, "Blame below an inner node": revoke what the convicted node (and the nodes
  // below it, as their NodeJoined placed them) computed — or, when the master's child is
  // itself held responsible, everything that came through it.
  root.convict = [&](const std::string& culprit, const std::string& via, bool whole_child) {
    ++convicted;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> revoked;
    if (whole_child) {
      revoked = task_log->revoke_via(task_log->intern(via));
    } else {
      std::unordered_set<std::string> below{culprit};
      for (bool grew = true; grew;) {
        grew = false;
        for (const auto& n : results.nodes)
          if (below.contains(n.parent) && below.insert(n.name).second) grew = true;
      }
      std::unordered_set<std::uint32_t> ids;
      for (const auto& name : below) ids.insert(task_log->intern(name));
      revoked = task_log->revoke_if([&](const metrics::PackedTaskRecord& rec) { return ids.contains(rec.node); });
    }
    std::vector<core::TaskRef> redo;
    for (const auto& [app, index] : revoked) {
      redo.push_back(core::TaskRef{core::TaskId::make(core::AppId{app}, index)});
      --per_app[app];
      --done;
      if (journal) journal->revoke(app, index);
    }
    redone += redo.size();
    spdlog::error("master: convicted '{}' of forging ({}): disconnected, {} results redone", culprit,
                  whole_child ? "held responsible for everything through it" : "its honest ancestors keep their results",
                  redo.size());
    return redo;
  };
  root.on_result = [&](const net::msg::Result& r, bool duplicate, double now) {
    std::uint32_t via = metrics::PackedTaskRecord::no_via;
    if (auto it = arriving_via.find(r.task_id); it != arriving_via.end()) {
      via = it->second;
      arriving_via.erase(it);
    }
    if (duplicate) {
      ++results.duplicates;
      return;
    }
    const core::TaskId id{r.task_id};
    const std::uint32_t k = id.app().value;
    auto& app = results.apps.at(k);
    if (r.failed) {
      ++app.failed;
      results.failures.push_back(metrics::TaskFailure{k, id.index(), r.node, r.error});
    } else if (journal) {
      journal->add(JournalEntry{k, id.index(), time_offset + now - start, r.compute_seconds, r.node});
    }
    metrics::PackedTaskRecord rec{id.index(), k, task_log->intern(r.node), time_offset + now - start,
                                  r.compute_seconds, -1.0, static_cast<float>(r.queued_seconds), via};
    if (k < dispatched.size() && id.index() < dispatched[k].size() && dispatched[k][id.index()] >= 0)
      rec.dispatched_at = time_offset + dispatched[k][id.index()];
    task_log->add(rec);
    ++per_app[k];
    ++done;
  };
  // Output files (issue 20): an output must give its result's checksum (the SHA-256 the
  // computing node reported); it is written once, when its result is recorded.
  root.check_output = [&](const net::msg::Result& r, const node::Payload& output) {
    const auto digest = tasks::sha256_hex(std::span<const std::byte>(output->data(), output->size()));
    if (tasks::sha256_checksum(digest) == r.checksum) return true;
    const core::TaskId id{r.task_id};
    spdlog::error("master: the output of task {} of '{}' from '{}' does not match its result's digest", id.index(),
                  ex.apps.at(id.app().value).name, r.node);
    return false;
  };
  root.on_output = [&](const net::msg::Result& r, const node::Payload& output) {
    const core::TaskId id{r.task_id};
    const auto& app = ex.apps.at(id.app().value);
    const auto dir = std::filesystem::path(options.out_dir) / "outputs" / app.name;
    std::string name = app.output_file;
    for (auto at = name.find("{index}"); at != std::string::npos; at = name.find("{index}", at))
      name.replace(at, 7, std::to_string(id.index()));
    std::filesystem::create_directories(dir);
    const auto part = dir / (name + ".part");
    {
      std::ofstream out(part, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(output->data()), static_cast<std::streamsize>(output->size()));
      if (!out) throw std::runtime_error("cannot write " + part.string());
    }
    std::filesystem::rename(part, dir / name);  // a crash leaves no half-written output under its name
  };
  root.on_joined = [&](const net::msg::NodeJoined& j) {
    // A worker that rejoins (restarted or reconnected) is the same node.
    for (auto& n : results.nodes)
      if (n.name == j.name) {
        n.parent = j.parent;
        n.cores = j.cores;
        return;
      }
    results.nodes.push_back(metrics::NodeResult{j.name, j.parent, j.cores, 0});
  };
  root.on_measure = [&](const net::msg::Measure& m) {  // issue 21: every fallback reported
    if (m.what == net::msg::Measure::What::fallbacks)
      results.policy_fallbacks[m.node] = static_cast<std::uint64_t>(m.value);
  };
  // Progress (runtime/metrics/Progress.hpp): JSON lines on stdout for scripts, else on stderr a
  // live bar per application on a terminal, a plain line per second otherwise.
  std::vector<Progress::App> progress_apps;
  for (const auto& app : ex.apps) progress_apps.push_back({app.name, app.tasks});
  const Progress::Mode progress_mode = !options.progress       ? Progress::Mode::off
                                       : options.json_progress ? Progress::Mode::json
                                       : ::isatty(2)           ? Progress::Mode::bar
                                                               : Progress::Mode::plain;
  Progress progress(progress_apps, progress_mode, progress_mode == Progress::Mode::json ? std::cout : std::cerr);
  std::unordered_map<std::string, std::uint64_t> done_by_node;  // `treefarm status` (on_status only)
  std::unordered_map<std::string, net::msg::NodeLoad> load_by_node;
  if (options.on_status) root.on_load = [&](const net::msg::NodeLoad& l) { load_by_node[l.name] = l; };
  if (options.on_status)
    root.on_result = [&, record = root.on_result](const net::msg::Result& r, bool duplicate, double now) {
      if (!duplicate) ++done_by_node[r.node];
      record(r, duplicate, now);
    };
  root.on_tick = [&](double now) {
    if (journal) journal->sync();  // to disk on the journal's thread: a crash loses ~1–2 s of results
    if (options.on_status)
      options.on_status(status_json(results, per_app, done_by_node, load_by_node, start > 0 ? now - start : 0.0));
    if (start == 0 && done == 0) return;
    progress.tick(now - start, per_app);
  };

  // Calibration run: every node measures in place; the master gathers the figures.
  model::Calibration calibration;
  std::size_t expected_measures = 0, got_measures = 0;
  std::set<std::string> measured;
  std::map<std::string, std::size_t> live_children;  // live tree: children joined per node
  std::size_t live_joined = 0;                       // live tree: nodes joined
  zmq_node::ZmqNode* self = nullptr;
  // A live tree's calibration is complete once every node that joined is measured and the
  // nodes expected have joined, or the wait for them is over.
  const auto calibration_complete = [&](double now) {
    return got_measures >= expected_measures &&
           (!options.live_tree || live_joined >= options.wait_for_nodes.value_or(0) || now >= options.wait_timeout);
  };
  double last_tick = 0;
  if (calibrating) {
    root.welcome.calibrate_reps = std::max<std::uint32_t>(1, options.calibrate_reps);
    std::uint64_t probe = 1 << 20;
    for (const auto& app : ex.apps) probe = std::max<std::uint64_t>(probe, app.input_bytes());
    root.welcome.probe_bytes = probe;
    root.wait_for_nodes = 0;
    calibration.experiment = ex.path;
    calibration.apps = model::app_signatures(ex);
    const auto expect_kernels = [&](std::uint32_t cores) {
      for (const auto& app : ex.apps)
        if (cores > 0 && app.cores_per_task <= cores) ++expected_measures;
    };
    for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
      const auto& n = ex.nodes[i];
      calibration.nodes[n.name].cores = n.cores;
      calibration.nodes[n.name].parent = n.parent.value_or("");
      if (i > 0) ++expected_measures;  // the link from its parent
      if (ex.children(i).size() >= 2) ++expected_measures;  // its aggregate output
      expect_kernels(i == 0 ? static_cast<std::uint32_t>(compute.cores.size()) : n.cores);
    }
    spdlog::info("master: calibration run, {} measurements expected{}", expected_measures,
                 options.live_tree ? " from the master; more for each node of the live tree that joins" : "");
    // Record the cores each node advertises when it joins (what it really has). On a live
    // tree (docs/serve.md) the nodes are those that join: each one adds its link, its
    // kernels and, at its parent's second child, the parent's aggregate output.
    root.on_joined = [&, expect_kernels, listed = root.on_joined](const net::msg::NodeJoined& j) {
      listed(j);
      if (auto it = calibration.nodes.find(j.name); it != calibration.nodes.end()) {
        it->second.cores = j.cores;
        return;
      }
      if (!options.live_tree) return;
      auto& nc = calibration.nodes[j.name];
      nc.cores = j.cores;
      nc.parent = j.parent;
      ++expected_measures;
      expect_kernels(j.cores);
      if (++live_children[j.parent] == 2) ++expected_measures;
      ++live_joined;
    };
    root.on_measure = [&](const net::msg::Measure& m) {
      auto it = calibration.nodes.find(m.node);
      if (it == calibration.nodes.end()) {
        spdlog::warn("master: measurement for unknown node '{}' ignored", m.node);
        return;
      }
      using What = net::msg::Measure::What;
      if (m.what == What::fallbacks) return;
      if (m.what == What::output_bytes) {  // issue 20: not a measurement of its own, it comes with task_seconds
        it->second.output_bytes[m.app] = m.value;
        return;
      }
      if (m.what == What::task_seconds) {
        it->second.task_seconds[m.app] = m.value;
      } else if (m.what == What::link_round_trip) {
        it->second.link_round_trip = m.value;
      } else if (m.value > 0) {
        auto& nc = it->second;
        (m.what == What::link_bandwidth       ? nc.link_bandwidth
         : m.what == What::link_bandwidth_min ? nc.link_bandwidth_min
         : m.what == What::link_bandwidth_max ? nc.link_bandwidth_max
                                              : nc.out_bandwidth) = m.value;
      }
      // The spread and round trip of a link come before its median (LinkProber): only the
      // median counts the link as measured.
      if (m.what == What::link_round_trip || m.what == What::link_bandwidth_min ||
          m.what == What::link_bandwidth_max)
        return;
      // A node measures its aggregate output again when another child joins: count keys once.
      measured.insert(m.node + "/" + m.app + "/" + std::to_string(static_cast<int>(m.what)));
      got_measures = measured.size();
      if (calibration_complete(last_tick) && self) self->finish();
    };
    root.on_tick = [&](double now) {
      last_tick = now;
      if (options.live_tree && calibration_complete(now) && self) {
        spdlog::info("master: calibration of the live tree: {} nodes joined and measured", live_joined);
        self->finish();
        return;
      }
      if (options.progress)
        std::fprintf(stderr, "[%d s] calibration: %zu/%zu measurements\n", static_cast<int>(now), got_measures,
                     expected_measures);
      if (now > options.calibrate_timeout && self) {
        spdlog::error("master: calibration incomplete after {} s", options.calibrate_timeout);
        self->stop();
      }
    };
  }

  // Cancelled by a client of a served tree: the run ends as a finished one (the children
  // reset and stay), with what completed so far.
  bool cancelled = false;
  if (options.cancel && !calibrating)
    root.on_tick = [&, tick = root.on_tick](double now) {
      if (!cancelled && options.cancel->load() && self) {
        cancelled = true;
        spdlog::warn("master: cancelled by a client after {} of {} tasks: ending the run", done, total);
        self->finish();
      }
      if (tick) tick(now);
    };

  if (ex.run.policy == "lp" && options.calibration.empty() && !calibrating)
    throw std::invalid_argument("policy 'lp' follows the LP solution, which needs the platform measured: give "
                                "--calibration FILE or use `treefarm run --calibrate`");
  // Prediction from a calibration file (papers/beaumont2006 §3.1, LP (3)).
  if (!options.calibration.empty()) {
    const auto cal = model::load_calibration_for(options.calibration, declared ? *declared : ex);
    auto platform = lp::model_from_calibration(ex, cal);
    if (options.pooled_inputs)  // no input is generated per task (docs/security.md, "Secret inputs")
      for (auto& h : platform.hosts) h.input_cpu_seconds_per_byte = 0.0;
    const auto solution = lp::solve(platform);
    results.predicted_fair_throughput = solution.fair_throughput;
    // Tell every node what the calibration and the LP say about it (policies use it).
    for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
      net::msg::NodeHint h;
      h.name = ex.nodes[i].name;
      const auto& nc = cal.nodes.count(h.name) ? cal.nodes.at(h.name) : model::NodeCalibration{};
      h.link_bandwidth = nc.link_bandwidth.value_or(0.0);
      for (std::size_t k = 0; k < ex.apps.size(); ++k) {
        const auto t = nc.task_seconds.find(ex.apps[k].name);
        h.task_seconds.push_back(t == nc.task_seconds.end() ? 0.0 : t->second);
        h.alpha.push_back(solution.alpha[i][k]);
        h.received.push_back(i == 0 ? 0.0 : solution.sent[i][k]);
      }
      root.welcome.hints.push_back(std::move(h));
    }
    if (net::encode(root.welcome).size() > net::max_body_bytes - 1024) {
      spdlog::warn("master: the tree is too large to send per-node hints in the Welcome; policies will learn instead");
      root.welcome.hints.clear();
    }
    for (std::size_t k = 0; k < results.apps.size(); ++k) results.apps[k].predicted = solution.app_throughput[k];
    spdlog::info("master: LP optimum fair throughput {:.4f} tasks/s", solution.fair_throughput);
  }

  // Served tree (docs/serve.md): the run goes to the live root, which keeps its children.
  std::optional<zmq_node::ZmqNode> own;
  if (!options.live) own.emplace(node_options, endpoints, compute, std::move(root));
  zmq_node::ZmqNode& runtime = options.live ? *options.live : *own;
  self = &runtime;
  running = &runtime;
  int rc = options.live ? runtime.run_root(std::move(root)) : runtime.run();
  running = nullptr;
  if (journal) journal->flush();
  if (!calibrating) {
    const auto made = inputs ? inputs->stats() : tasks::InputPrefetcher::Stats{};
    spdlog::info("master: spot checks: {} of {} results from children recomputed ({:.2f} %, {:.3f} s), {} "
                 "nodes convicted of forging, {} results redone; {} task inputs generated ({:.3f} s; {} ready ahead, "
                 "{} waited for{})",
                 checked, from_children,
                 from_children ? 100.0 * static_cast<double>(checked) / static_cast<double>(from_children) : 0.0,
                 check_seconds, convicted, redone, made.generated, made.generate_seconds, made.ready,
                 made.generated_on_caller, options.pooled_inputs ? "; pooled: 2 per application reused" : "");
  }
  // Interrupted before or while dispatching: the node may end "cleanly" with tasks never
  // sent; that is an interruption (130), not a run with lost tasks (4).
  if (stop_requested && rc == node::exit_ok) rc = node::exit_interrupted;

  if (calibrating) {
    if (got_measures < expected_measures) {
      spdlog::error("master: calibration got {} of {} measurements", got_measures, expected_measures);
      return rc != 0 ? rc : 1;
    }
    model::save_calibration(calibration, options.calibrate_out);
    std::printf("calibration written to %s\n", options.calibrate_out.c_str());
    for (const auto& [name, nc] : calibration.nodes) {
      std::printf("  %-12s", name.c_str());
      for (const auto& [app, s] : nc.task_seconds) {
        std::printf("  %s %.6f s/task", app.c_str(), s);
        if (const auto o = nc.output_bytes.find(app); o != nc.output_bytes.end())
          std::printf(" (%.0f bytes of output)", o->second);
      }
      if (nc.link_bandwidth) {
        std::printf("  link %.3g bytes/s", *nc.link_bandwidth);
        if (nc.link_bandwidth_min && nc.link_bandwidth_max)
          std::printf(" (rounds %.3g to %.3g)", *nc.link_bandwidth_min, *nc.link_bandwidth_max);
      }
      if (nc.link_round_trip) std::printf("  rtt %.3g s", *nc.link_round_trip);
      else if (name != ex.nodes[0].name) std::printf("  link: faster than the probe resolves (loopback)");
      if (nc.out_bandwidth) std::printf("  out (all children) %.3g bytes/s", *nc.out_bandwidth);
      std::printf("\n");
    }
    return rc;
  }

  // A run that failed or was interrupted has no throughput to report: no table of zeros,
  // no results.json that a script could take for a finished run (issue 18).
  if (rc != 0) {
    spdlog::error("master: run failed (exit code {}) after {} of {} tasks; no results written", rc, done, total);
    return rc;
  }
  results.compute();
  if (!results.policy_fallbacks.empty()) {
    std::uint64_t fallbacks = 0;
    for (const auto& [node, n] : results.policy_fallbacks) fallbacks += n;
    spdlog::info("master: policy {} fell back {} times over {} nodes (no planned choice feasible)", ex.run.policy,
                 fallbacks, results.policy_fallbacks.size());
  }
  if (!options.out_dir.empty()) {
    const auto path = std::filesystem::path(options.out_dir) / "results.json";
    // Streamed: the task list is written from the task log, never held as a DOM (issue 14).
    const auto t0 = std::chrono::steady_clock::now();
    metrics::write_file_atomically(path, [&](const std::function<void(std::string_view)>& sink) {
      metrics::write_results_json(sink, results, [&] {
        // Measured once every task is written: the master's peak includes results.json.
        const auto now_memory = metrics::process_memory();
        nlohmann::json trailer{{"master_memory",
                                {{"rss_at_start_bytes", memory_at_start.rss_bytes},
                                 {"peak_rss_bytes", now_memory.peak_rss_bytes},
                                 {"tasks_recorded", results.task_count()},
                                 {"tasks_write_seconds",
                                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}}}};
        if (cancelled) trailer["cancelled"] = true;  // `treefarm cancel`: what completed is above
        return trailer;
      });
    });
    spdlog::info("master: results.json written in {:.3f} s",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    spdlog::info("master: wrote {}", path.string());
  }
  if (options.json_progress) {
    // stdout carries JSON lines only: the last one is the results (results.json without
    // the per-task records and the experiment text).
    auto j = metrics::to_json(results, false);
    j.erase("experiment_text");
    j["type"] = "results";
    std::cout << j.dump() << std::endl;
  } else if (options.table) {
    metrics::print_table(std::cout, results);
  }
  if (cancelled) return node::exit_interrupted;
  if (!results.ok()) {
    spdlog::error("master: run not OK: {} lost, {} wrong or failed", results.lost,
                  [&] { std::uint64_t n = 0; for (auto& a : results.apps) n += a.wrong + a.failed; return n; }());
    return node::exit_wrong_results;
  }
  return 0;
}

}  // namespace treefarm::master
