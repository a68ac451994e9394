#include "runtime/node/LocalWork.hpp"

#include <algorithm>
#include <limits>

namespace treefarm::node {

void LocalWork::configure(const std::vector<model::AppSpec>& apps) {
  min_cores_per_task_ = std::numeric_limits<std::uint32_t>::max();
  for (const auto& app : apps) min_cores_per_task_ = std::min(min_cores_per_task_, app.cores_per_task);
}

std::uint32_t LocalWork::claim() {
  if (!runner_ || min_cores_per_task_ == 0 || min_cores_per_task_ == std::numeric_limits<std::uint32_t>::max()) return 0;
  const std::uint64_t claimed = committed_cores_ + std::uint64_t{pending_} * min_cores_per_task_;
  if (claimed >= runner_->cores()) return 0;
  const auto n = static_cast<std::uint32_t>((runner_->cores() - claimed) / min_cores_per_task_);
  pending_ += n;
  return n;
}

void LocalWork::start_task(core::TaskRef task, const model::AppSpec& app, const Payload& input) {
  if (pending_ > 0) --pending_;
  const std::uint64_t id = next_job_++;
  jobs_.emplace(id, Job{task, epoch_, task.app().value, app.cores_per_task});
  committed_cores_ += app.cores_per_task;
  runner_->start_task(id, app, input, task.id.index());
}

void LocalWork::start_calibration(std::size_t k, const model::AppSpec& app, const Payload& input) {
  const std::uint64_t id = next_job_++;
  jobs_.emplace(id, Job{std::nullopt, 0, k, app.cores_per_task});
  runner_->start(id, app, input);
}

std::optional<LocalWork::Job> LocalWork::finish(std::uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  const Job job = it->second;
  jobs_.erase(it);
  if (job.task) committed_cores_ -= job.cores;
  return job;
}

void LocalWork::ran(std::size_t k, double seconds, std::size_t apps) {
  if (k >= apps) return;
  seconds_.resize(apps, 0.0);
  runs_.resize(apps, 0);
  seconds_[k] += seconds;
  ++runs_[k];
}

std::optional<double> LocalWork::mean_seconds(std::size_t k) const {
  if (k >= runs_.size() || runs_[k] == 0) return std::nullopt;
  return seconds_[k] / static_cast<double>(runs_[k]);
}

std::size_t LocalWork::running_tasks() const {
  std::size_t running = 0;
  for (const auto& [id, job] : jobs_)
    if (job.task && job.epoch == epoch_) ++running;
  return running;
}

void LocalWork::lost_parent() {
  pending_ = 0;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->second.task) ++it;
    else jobs_.erase(it++);  // calibration runs: forgotten (an erasure moves no other entry)
  }
  ++epoch_;
}

}  // namespace treefarm::node
