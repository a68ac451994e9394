#include "master/RunRecord.hpp"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unordered_set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/core/MigrationOptions.hpp"
#include "runtime/exec/Topology.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/model/BagSource.hpp"
#include "runtime/node/ExitCode.hpp"
#include "tasks/BlasKernel.hpp"
#include "tasks/Checksum.hpp"
#include "tasks/CommandTask.hpp"

namespace treefarm::master {

using metrics::JournalEntry;
using nlohmann::json;

void RunRecord::check_output_quota() const {
  if (outputs_.over_quota())
    throw std::runtime_error("the outputs exceeded the experiment's output quota of " + std::to_string(outputs_.quota()) +
                             " bytes (--output-quota): those past it were not kept; results.json has every result");
}

RunRecord::RunRecord(const model::Experiment& ex, const std::string& text, const MasterOptions& options,
                     bool calibrating)
    : ex_(ex), options_(options), outputs_(options.out_dir, options.output_quota), results_(metrics::empty_results(ex)),
      per_app_(ex.apps.size(), 0), dispatched_(ex.apps.size()) {
  eta_ = EtaModel(ex.total_tasks());
  eta_.node_cores(ex.nodes.at(0).name, ex.nodes.at(0).cores);
  // Per-task records go to a compact spill file, not memory (TaskLog.hpp).
  task_log_ = std::make_shared<metrics::TaskLog>(calibrating ? std::string() : options.out_dir);
  results_.task_log = task_log_;
  // The header of results.json: what is needed to reproduce the run.
  results_.treefarm_version = cli_support::version();
  results_.experiment_text = text;
  const auto topo = exec::discover_topology();
  results_.host = exec::to_json(topo);
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  results_.host["hostname"] = host;
  results_.host["blas"] = tasks::to_json(tasks::blas_info());
  results_.settings = {{"policy", ex.run.policy},
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
  if (!options.experiment.empty())  // treefarm resubmit OUT runs it again from there
    results_.settings["experiment_file"] = std::filesystem::absolute(options.experiment).lexically_normal().string();
  for (std::size_t k = 0; k < ex.apps.size(); ++k) dispatched_[k].assign(ex.apps[k].tasks, -1.0);
  open_journal(calibrating);
  results_.for_each_task([&](const metrics::TaskView& t) { ++per_app_[t.app]; });  // resumed: the journal's tasks count
  done_ = results_.task_count();
}

// Journal and resume (docs/fault-tolerance.md).
void RunRecord::open_journal(bool calibrating) {
  if (options_.out_dir.empty() || calibrating) return;
  std::vector<std::string> names, kernels;
  std::vector<std::uint64_t> app_tasks;
  for (const auto& app : ex_.apps) {
    names.push_back(app.name);
    kernels.emplace_back(model::to_string(app.kernel));
    app_tasks.push_back(app.tasks);
  }
  const auto fingerprint = metrics::journal_fingerprint(ex_.run.seed, names, kernels, app_tasks);
  const auto path = std::filesystem::path(options_.out_dir) / "journal.tsv";
  const bool have = options_.resume && std::filesystem::exists(path);
  std::vector<JournalEntry> before;
  if (have) before = metrics::load_journal(path, fingerprint, app_tasks);
  else if (options_.resume) spdlog::warn("master: --resume: no journal at {}, starting from scratch", path.string());
  journal_ = std::make_unique<metrics::Journal>(path, fingerprint, have);
  if (before.empty()) return;
  resumed_.assign(ex_.apps.size(), {});
  for (std::size_t k = 0; k < ex_.apps.size(); ++k) resumed_[k].assign(ex_.apps[k].tasks, false);
  for (const auto& e : before) {
    resumed_[e.app][e.index] = true;
    task_log_->add(metrics::PackedTaskRecord{e.index, e.app, task_log_->intern(e.node), e.completed_at,
                                             e.compute_seconds, -1.0, 0.0f, metrics::PackedTaskRecord::no_via});
    time_offset_ = std::max(time_offset_, e.completed_at);
  }
  spdlog::info("master: resuming {}: {} of {} tasks already done", path.string(), before.size(), ex_.total_tasks());
}

void RunRecord::install(node::RootSetup& root) {
  root.done_before = resumed_;
  root.on_start = [this](double now) {
    start_ = now;
    cpu_at_start_ = metrics::process_cpu_seconds();
    const auto joined = metrics::process_memory();
    rss_joined_ = joined.rss_bytes;
    shmem_joined_ = joined.shmem_bytes;
    steady_start_ = std::chrono::steady_clock::now();
    const std::time_t wall = std::time(nullptr);
    char iso[32];
    std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&wall));
    results_.started_utc = iso;
    spdlog::info("master: starting {} tasks with policy {} ({} nodes joined)", ex_.total_tasks(), ex_.run.policy,
                 results_.nodes.size() - 1);
  };
  root.on_result = [this](const net::msg::Result& r, bool duplicate, double now) {
    std::uint32_t via = metrics::PackedTaskRecord::no_via;
    if (auto it = arriving_via_.find(r.task_id); it != arriving_via_.end()) {
      via = it->second;
      arriving_via_.erase(it);
    }
    if (duplicate) {
      ++results_.duplicates;
      return;
    }
    if (options_.on_status || options_.dashboard) ++done_by_node_[r.node];
    const core::TaskId id{r.task_id};
    const std::uint32_t k = id.app().value;
    auto& app = results_.apps.at(k);
    if (r.failed) {
      ++app.failed;
      const auto tries = attempts_.find(r.task_id);
      results_.failures.push_back(metrics::TaskFailure{k, id.index(), r.node, r.error, input_of(id),
                                                       tries == attempts_.end() ? 1u : tries->second + 1});
    } else {
      eta_.completed(r.node, r.compute_seconds, ex_.apps.at(k).cores_per_task);
    }
    if (!r.failed && journal_) {
      journal_->add(JournalEntry{k, id.index(), time_offset_ + now - start_, r.compute_seconds, r.node});
    }
    metrics::PackedTaskRecord rec{id.index(), k, task_log_->intern(r.node), time_offset_ + now - start_,
                                  r.compute_seconds, -1.0, static_cast<float>(r.queued_seconds), via};
    if (k < dispatched_.size() && id.index() < dispatched_[k].size() && dispatched_[k][id.index()] >= 0)
      rec.dispatched_at = time_offset_ + dispatched_[k][id.index()];
    task_log_->add(rec);
    if (!task_log_->disk_full().empty() && !disk_full_told_) {
      disk_full_told_ = true;  // the journal decides whether results are still taken
      spdlog::warn("master: {}", task_log_->disk_full());
    }
    last_result_at_ = now - start_;
    ++per_app_[k];
    if (++done_ == total()) cpu_at_last_result_ = metrics::process_cpu_seconds();
  };
  root.retry = [this](const net::msg::Result& r) { return retry(r); };
  // Output files (docs/command-tasks.md): an output must give its result's checksum (the
  // SHA-256 the computing node reported); it is written once, when its result is recorded.
  root.check_output = [this](const net::msg::Result& r, const node::Payload& output) {
    const auto digest = tasks::sha256_hex(std::span<const std::byte>(output->data(), output->size()));
    if (tasks::sha256_checksum(digest) == r.checksum) return true;
    const core::TaskId id{r.task_id};
    spdlog::error("master: the output of task {} of '{}' from '{}' does not match its result's digest", id.index(),
                  ex_.apps.at(id.app().value).name, r.node);
    return false;
  };
  root.on_output = [this](const net::msg::Result& r, const node::Payload& output) {
    const core::TaskId id{r.task_id};
    const auto& app = ex_.apps.at(id.app().value);
    std::vector<model::TaskField> fields{{"index", std::to_string(id.index())}};
    if (app.bag) {
      try {
        fields = app.bag->fields(id.index());
      } catch (const std::exception& e) {  // a lines file changed under the run: named by index
        spdlog::warn("master: output of task {} of '{}' named by its index: {}", id.index(), app.name, e.what());
      }
    }
    const std::string name = model::output_name(app.output_file, fields);
    const bool over = outputs_.over_quota();
    if (outputs_.write(app.name, name, std::span<const std::byte>(output->data(), output->size())) || over) return;
    spdlog::error("master: the output of task {} of '{}' ({} bytes) would exceed the experiment's output quota of {} "
                  "bytes ({} written): not kept, nor any later one (--output-quota)",
                  id.index(), app.name, output->size(), outputs_.quota(), outputs_.written());
  };
  root.on_joined = [this](const net::msg::NodeJoined& j) {
    eta_.node_cores(j.name, j.cores);
    for (auto& n : results_.nodes)  // a worker that rejoins (restarted or reconnected) is the same node
      if (n.name == j.name) {
        n.parent = j.parent;
        n.cores = j.cores;
        return;
      }
    results_.nodes.push_back(metrics::NodeResult{j.name, j.parent, j.cores, 0});
  };
  root.on_measure = [this](const net::msg::Measure& m) {  // every policy fallback reported
    if (m.what == net::msg::Measure::What::fallbacks) results_.policy_fallbacks[m.node] = static_cast<std::uint64_t>(m.value);
  };
  if (options_.on_status || options_.dashboard)
    root.on_load = [this](const net::msg::NodeLoad& l) {
      auto& r = load_by_node_[l.name];
      r.load = l;
      ++r.reports;
    };
}

std::optional<EtaModel::Eta> RunRecord::eta(double now) {
  double planned = 0;  // every application's LP rate, or none
  for (const auto& a : results_.apps) {
    if (!a.predicted) {
      planned = 0;
      break;
    }
    planned += *a.predicted;
  }
  eta_.plan_rate(planned);
  eta_.observe(elapsed(now), done_);
  return eta_.eta(done_);
}

bool RunRecord::retry(const net::msg::Result& r) {
  const core::TaskId id{r.task_id};
  const auto& app = ex_.apps.at(id.app().value);
  if (app.max_retries == 0) return false;
  auto& tries = attempts_[r.task_id];
  if (tries >= app.max_retries) return false;
  ++tries;
  ++retried_;
  spdlog::warn("master: task {} of '{}' failed on {} ({}): run again, retry {} of {}", id.index(), app.name, r.node,
               r.error.substr(0, 200), tries, app.max_retries);
  return true;
}

std::string RunRecord::input_of(core::TaskId id) const {
  const auto& app = ex_.apps.at(id.app().value);
  if (!app.bag) return {};
  try {
    switch (app.bag->form()) {
      case model::BagSource::Form::files: return app.bag->paths().at(id.index());
      case model::BagSource::Form::lines: return app.bag->line(id.index());
      case model::BagSource::Form::array: return std::to_string(app.bag->number(id.index()));
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

std::vector<core::TaskRef> RunRecord::revoke(const std::string& culprit, const std::string& via, bool whole_child) {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> revoked;
  if (whole_child) {
    revoked = task_log_->revoke_via(task_log_->intern(via));
  } else {  // the culprit and the nodes below it, as their NodeJoined placed them
    std::unordered_set<std::string> below{culprit};
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& n : results_.nodes)
        if (below.contains(n.parent) && below.insert(n.name).second) grew = true;
    }
    std::unordered_set<std::uint32_t> ids;
    for (const auto& name : below) ids.insert(task_log_->intern(name));
    revoked = task_log_->revoke_if([&](const metrics::PackedTaskRecord& rec) { return ids.contains(rec.node); });
  }
  std::vector<core::TaskRef> redo;
  for (const auto& [app, index] : revoked) {
    redo.push_back(core::TaskRef{core::TaskId::make(core::AppId{app}, index)});
    --per_app_[app];
    --done_;
    if (journal_) journal_->revoke(app, index);
  }
  return redo;
}

void RunRecord::sync() {
  if (journal_) journal_->sync();  // to disk on the journal's thread: a crash loses ~1–2 s of results
}

json RunRecord::status(double now) const {
  const double seconds = elapsed(now);
  json apps = json::array(), nodes = json::array();
  for (std::size_t k = 0; k < results_.apps.size(); ++k) {
    const auto& a = results_.apps[k];
    apps.push_back({{"name", a.name},
                    {"tasks", a.tasks},
                    {"done", per_app_[k]},
                    {"throughput", seconds > 0 ? static_cast<double>(per_app_[k]) / seconds : 0.0},
                    {"predicted", a.predicted ? json(*a.predicted) : json()}});
  }
  for (const auto& n : results_.nodes) {
    const auto it = done_by_node_.find(n.name);
    nodes.push_back({{"name", n.name}, {"parent", n.parent}, {"cores", n.cores},
                     {"done", it == done_by_node_.end() ? std::uint64_t{0} : it->second}});
    // Its state as its last heartbeat brought it up: busy cores, tasks held and not
    // running, the machine's 1-minute load average (null: unknown).
    if (const auto r = load_by_node_.find(n.name); r != load_by_node_.end()) {
      const auto& l = r->second.load;
      nodes.back()["busy_cores"] = l.busy_cores;
      nodes.back()["queued"] = l.queued;
      nodes.back()["load1"] = l.load1 >= 0 ? json(l.load1) : json();
      nodes.back()["reports"] = r->second.reports;  // stops growing once the node is lost
    }
  }
  json out{{"elapsed", seconds}, {"apps", apps}, {"nodes", nodes}};
  if (const auto e = eta_.eta(done_))  // `treefarm status`: the predicted completion
    out["eta"] = {{"remaining", e->remaining}, {"rate", e->rate}, {"seconds_left", e->seconds_left},
                  {"text", EtaModel::text(*e)}};
  return out;
}

json RunRecord::summary() const {
  json tree = json::array(), apps = json::array();
  if (!finished_) return {{"tree", tree}, {"apps", apps}};
  for (const auto& n : results_.nodes)
    tree.push_back({{"name", n.name}, {"parent", n.parent}, {"cores", n.cores}, {"done", n.tasks_computed}});
  for (const auto& a : results_.apps)
    apps.push_back({{"name", a.name}, {"tasks", a.tasks}, {"done", a.completed}, {"throughput", a.throughput},
                    {"predicted", a.predicted ? json(*a.predicted) : json()}});
  return {{"tree", tree}, {"apps", apps}};
}

int RunRecord::finish(int rc, bool cancelled, const metrics::ProcessMemory& memory_at_start) {
  cpu_at_end_ = metrics::process_cpu_seconds();
  if (journal_) journal_->flush();
  // A run that failed or was interrupted has no throughput to report: no table of zeros,
  // no results.json that a script could take for a finished run.
  if (rc != 0) {
    if (rc == node::exit_interrupted)
      spdlog::warn("master: stopped by a signal after {} of {} tasks; no results written", done_, total());
    else
      spdlog::error("master: run failed (exit code {}) after {} of {} tasks; no results written", rc, done_, total());
    return rc;
  }
  results_.compute();
  if (on_computed_) on_computed_(results_);
  finished_ = true;
  if (!results_.policy_fallbacks.empty()) {
    std::uint64_t fallbacks = 0;
    for (const auto& [node, n] : results_.policy_fallbacks) fallbacks += n;
    spdlog::info("master: policy {} fell back {} times over {} nodes (no planned choice feasible)", ex_.run.policy,
                 fallbacks, results_.policy_fallbacks.size());
  }
  if (!options_.out_dir.empty()) {
    const auto path = std::filesystem::path(options_.out_dir) / "results.json";
    // Streamed: the task list is written from the task log, never held as a DOM.
    const auto t0 = std::chrono::steady_clock::now();
    metrics::write_file_atomically(path, [&](const std::function<void(std::string_view)>& sink) {
      metrics::write_results_json(sink, results_, [&] {
        // Measured once every task is written: the master's peak includes results.json.
        const auto now_memory = metrics::process_memory();
        json trailer{{"master_memory",
                      {{"rss_at_start_bytes", memory_at_start.rss_bytes},
                       {"peak_rss_bytes", now_memory.peak_rss_bytes},
                       {"tasks_recorded", results_.task_count()},
                       {"join_seconds", start_},
                       {"rss_joined_bytes", rss_joined_},
                       {"rss_shmem_at_start_bytes", memory_at_start.shmem_bytes},
                       {"rss_shmem_joined_bytes", shmem_joined_},
                       {"dispatch_cpu_seconds", (cpu_at_last_result_ >= 0 ? cpu_at_last_result_ : cpu_at_end_) - cpu_at_start_},
                       {"tasks_write_seconds",
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}}}};
        if (cancelled) trailer["cancelled"] = true;  // `treefarm cancel`: what completed is above
        if (const auto e = eta_.versus_actual(last_result_at_); !e.is_null()) trailer["eta"] = e;
        return trailer;
      });
    });
    spdlog::info("master: results.json written in {:.3f} s",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    spdlog::info("master: wrote {}", path.string());
  }
  if (options_.json_progress) {
    // stdout carries JSON lines only: the last one is the results (results.json without
    // the per-task records and the experiment text).
    auto j = metrics::to_json(results_, false);
    j.erase("experiment_text");
    j["type"] = "results";
    std::cout << j.dump() << std::endl;
  } else if (options_.table) {
    metrics::print_table(std::cout, results_);
  }
  // With the table only: --no-table hands the output to whoever started the master (a benchmark's JSON).
  if (const auto e = eta_.versus_actual(last_result_at_); !e.is_null() && options_.table && !options_.json_progress)
    std::cerr << fmt::format("ETA at {:.0f}% of the tasks ({:.1f} s): end predicted at {:.1f} s, actual end {:.1f} s "
                             "(predicted/actual {:.3f})\n",
                             100 * e["fraction_done"].get<double>(), e["made_at"].get<double>(),
                             e["predicted_end"].get<double>(), e["actual_end"].get<double>(), e["ratio"].get<double>());
  if (retried_ > 0) spdlog::info("master: {} failed attempts run again (max_retries)", retried_);
  if (cancelled) return node::exit_interrupted;
  if (!results_.ok()) {
    std::uint64_t bad = 0;
    for (const auto& a : results_.apps) bad += a.wrong + a.failed;
    spdlog::error("master: run not OK: {} lost, {} wrong or failed", results_.lost, bad);
    return node::exit_wrong_results;
  }
  return node::exit_ok;
}

}  // namespace treefarm::master
