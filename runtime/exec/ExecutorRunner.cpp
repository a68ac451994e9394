#include "runtime/exec/ExecutorRunner.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <stdexcept>

#include "runtime/exec/CpuQuota.hpp"
#include "runtime/exec/InlineTasks.hpp"
#include "tasks/CommandTask.hpp"
#include "tasks/Payload.hpp"
#include "tasks/SandboxOptions.hpp"
#include "tasks/TaskRunner.hpp"

namespace treefarm::exec {

/// What a job's thread writes, read when it ended. The input is held here until then.
struct ExecutorRunner::Run {
  std::uint64_t job = 0;
  node::Payload input;
  double checksum = 0;
  bool failed = false;   ///< a command that failed (its reason in `error`); kernels throw instead
  std::string error;
  node::Payload output = {};  ///< a command's output, when its application sends outputs back
  std::uint64_t output_bytes = 0;  ///< a command's output size, sent back or not
  /// Its CPU is not its thread's alone: a command's program (another process) or the
  /// arena's other threads of a multi-core task; JobOutcome::cpu_seconds stays unknown.
  bool other_threads = false;
};

ExecutorRunner::ExecutorRunner(ExecutorConfig config)
    : shared_cpus_(config.shared_cpus), exec_(std::move(config)) {
  if (const auto q = cpu_quota()) quota_period_ = q->period_seconds;
}
ExecutorRunner::~ExecutorRunner() { tasks::stop_all_commands(); }
ExecutorRunner::CommandsGate::~CommandsGate() { tasks::allow_commands(); }

std::uint32_t ExecutorRunner::cores() const { return exec_.total_cores(); }
int ExecutorRunner::notify_fd() const { return exec_.notify_fd(); }

void ExecutorRunner::start(std::uint64_t job, const model::AppSpec& app, const node::Payload& input) {
  if (app.kernel == model::Kernel::command && (!app.expect_digest.empty() || app.send_output)) {
    // The driver calls start only for calibration runs (tasks come through start_task): their input is
    // generated text, not the experiment's, so the expected digest cannot hold; their output goes nowhere
    // (only its size is kept: JobOutcome::output_bytes, what the calibration reports for the LP).
    model::AppSpec unchecked = app;
    unchecked.expect_digest.clear();
    unchecked.send_output = false;
    start_job(job, unchecked, input, 0, false);
    return;
  }
  start_job(job, app, input, 0, false);
}

void ExecutorRunner::start_task(std::uint64_t job, const model::AppSpec& app, const node::Payload& input,
                                std::uint64_t task_index) {
  start_job(job, app, input, task_index, true);
}

namespace {
double steady_seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}
}  // namespace

void ExecutorRunner::start_job(std::uint64_t job, const model::AppSpec& app, const node::Payload& input,
                               std::uint64_t task_index, bool task) {
  if (runs_inline(app, input ? input->size() : 0)) {  // tiny tasks: InlineTasks.hpp
    node::JobOutcome o;
    const auto t0 = std::chrono::steady_clock::now();
    inline_cpu_.begin(steady_seconds(t0));  // the thread's CPU: once per burst, not per task
    try {
      const std::span<const std::byte> bytes =
          input && input->data() ? std::span<const std::byte>(input->data(), input->size()) : std::span<const std::byte>();
      o.checksum = tasks::run_task(app, bytes, nullptr);
    } catch (const std::exception& e) {
      o.failed = true;
      o.error = e.what();
    }
    o.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (task) inline_cpu_.ran(&app, o.run_seconds);
    inline_done_.push_back(InlineDone{job, task ? &app : nullptr, std::move(o)});
    return;
  }
  auto run = std::make_shared<Run>();
  run->job = job;
  run->input = input;
  run->other_threads = app.kernel == model::Kernel::command || app.cores_per_task > 1;
  ExecTask t;
  t.id = job;
  t.cores = app.cores_per_task;
  t.memory = app.memory_per_task;
  t.run = [run, app, task_index, shared = &shared_cpus_](TaskContext& ctx) {
    const std::span<const std::byte> input_bytes =
        run->input && run->input->data() ? std::span<const std::byte>(run->input->data(), run->input->size())
                                         : std::span<const std::byte>();
    if (app.kernel == model::Kernel::command) {  // the program pinned to the task's cores
      // On a shared set the program may run on all of it, as the executor's threads do.
      const auto o = tasks::run_command(app, input_bytes, task_index, shared->empty() ? ctx.cores() : *shared);
      run->checksum = o.checksum;
      run->failed = o.failed;
      run->error = o.error;
      run->output_bytes = o.output_bytes;
      if (o.output) run->output = node::share(o.output);
      return;
    }
    tbb::task_arena* arena = ctx.cores().size() > 1 ? &ctx.arena() : nullptr;
    run->checksum = tasks::run_task(app, input_bytes, arena);
  };
  runs_.emplace(job, run);
  exec_.submit(std::move(t));
}

node::Payload ExecutorRunner::calibration_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t k) {
  auto input = std::make_shared<std::vector<std::byte>>();
  tasks::fill_input(app, seed, k, 0, *input);
  return node::share(std::move(input));
}

void ExecutorRunner::collect(const std::function<void(std::uint64_t, node::JobOutcome)>& done) {
  // Reported after the call that started them, never inside it (the driver is not re-entrant).
  // The two vectors trade places, keeping their room (no allocation per round).
  if (!inline_done_.empty()) inline_cpu_.close_if_long(steady_seconds(std::chrono::steady_clock::now()));
  auto ready = std::exchange(inline_done_, std::move(inline_spare_));
  inline_done_.clear();
  for (auto& d : ready) {
    if (d.app) d.outcome.cpu_seconds = inline_cpu_.take(d.app);  // what its application is owed so far
    done(d.job, std::move(d.outcome));
  }
  ready.clear();
  inline_spare_ = std::move(ready);
  // The burst ended (no inline task started meanwhile): its CPU, shared, is owed from now.
  if (inline_done_.empty() && inline_cpu_.open()) inline_cpu_.close(steady_seconds(std::chrono::steady_clock::now()));
  // No job on the core threads: nothing to read (poll_done() reads the eventfd, a system
  // call the fast path would otherwise pay on every round of the loop's drain).
  if (runs_.empty()) return;
  for (auto& d : exec_.poll_done()) {
    auto it = runs_.find(d.id);
    if (it == runs_.end()) continue;
    const auto run = it->second;
    runs_.erase(it);
    node::JobOutcome o;
    o.run_seconds = d.run_seconds;
    o.queued_seconds = d.queued_seconds;
    if (!run->other_threads) o.cpu_seconds = d.cpu_seconds;
    o.checksum = run->checksum;
    o.failed = run->failed;
    o.error = std::move(run->error);
    o.output = std::move(run->output);
    o.output_bytes = run->output_bytes;
    if (d.error) {
      o.failed = true;
      try {
        std::rethrow_exception(d.error);
      } catch (const std::exception& e) {
        o.error = e.what();
      } catch (...) {
        o.error = "unknown error";
      }
    }
    done(run->job, std::move(o));
  }
}

}  // namespace treefarm::exec
