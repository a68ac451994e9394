#include "runtime/exec/ExecutorRunner.hpp"

#include <span>
#include <stdexcept>

#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"

namespace treefarm::exec {

/// What a job's thread writes, read when it ended. The input is held here until then.
struct ExecutorRunner::Run {
  std::uint64_t job = 0;
  node::Payload input;
  double checksum = 0;
};

ExecutorRunner::ExecutorRunner(ExecutorConfig config) : exec_(std::move(config)) {}
ExecutorRunner::~ExecutorRunner() = default;

std::uint32_t ExecutorRunner::cores() const { return exec_.total_cores(); }
int ExecutorRunner::notify_fd() const { return exec_.notify_fd(); }

void ExecutorRunner::start(std::uint64_t job, const model::AppSpec& app, const node::Payload& input) {
  auto run = std::make_shared<Run>();
  run->job = job;
  run->input = input;
  ExecTask t;
  t.id = job;
  t.cores = app.cores_per_task;
  t.memory = app.memory_per_task;
  t.run = [run, app](TaskContext& ctx) {
    tbb::task_arena* arena = ctx.cores().size() > 1 ? &ctx.arena() : nullptr;
    const std::span<const std::byte> bytes =
        run->input && run->input->data() ? std::span<const std::byte>(run->input->data(), run->input->size())
                                         : std::span<const std::byte>();
    run->checksum = tasks::run_task(app, bytes, arena);
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
  for (auto& d : exec_.poll_done()) {
    auto it = runs_.find(d.id);
    if (it == runs_.end()) continue;
    const auto run = it->second;
    runs_.erase(it);
    node::JobOutcome o;
    o.run_seconds = d.run_seconds;
    o.queued_seconds = d.queued_seconds;
    o.checksum = run->checksum;
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
