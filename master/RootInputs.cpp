#include "master/RootInputs.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "runtime/model/BagSource.hpp"
#include "runtime/net/Batch.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/zmq/MadeBytes.hpp"
#include "tasks/TaskEnvelope.hpp"

namespace treefarm::master {

namespace {
/// A task's input made from its seed where it is needed: straight into the batch frame
/// that carries it to a child (no buffer, zero-fill or copy of its own), or once into a
/// buffer if read whole (zmq_node::MadeBytes).
class SecretInput final : public zmq_node::MadeBytes {
 public:
  SecretInput(std::shared_ptr<const model::AppSpec> app, std::uint32_t k, std::uint64_t seed)
      : MadeBytes(app->input_bytes()), app_(std::move(app)), k_(k), seed_(seed) {}

 private:
  void make(std::span<std::byte> out) const override { tasks::fill_input(*app_, seed_, k_, 0, out); }
  std::shared_ptr<const model::AppSpec> app_;  ///< shared: a payload may outlive the run's experiment
  std::uint32_t k_;
  std::uint64_t seed_;
};
}  // namespace

RootInputs::RootInputs(const model::Experiment& ex, bool pooled, bool made_when_sent)
    : ex_(ex), pooled_(pooled), secret_(tasks::RunSecret::random()), pool_(ex.apps.size()), small_(ex.apps.size()), made_on_send_(ex.apps.size()) {
  if (pooled_) {
    for (std::uint32_t k = 0; k < ex_.apps.size(); ++k)
      if (ex_.apps[k].kernel != model::Kernel::command)
        for (std::uint64_t j = 0; j < pool_size; ++j) pool_[k].push_back(make(k, j));
    return;
  }
  // A bag of files, lines or numbers reads each task's input when it is sent (bag_input):
  // nothing of it is generated ahead.
  auto generated = ex_.apps;
  for (auto& app : generated) {
    if (app.bag) app.bytes = 0;
    // Made when sent, straight into the child's shared slot: the prefetcher leaves them
    // alone, as it does the abstract kernel's.
    if (made_when_sent && tasks::has_fixed_input(app) && app.input_bytes() > net::max_batched_payload_bytes)
      app.kernel = model::Kernel::abstract;
  }
  prefetcher_.emplace(std::move(generated), [this](std::uint32_t app, std::uint64_t index) { return secret_.input_seed(app, index); });
  // Small inputs of the fixed-size kernels (no-op tasks, tiny matrices) are made in slabs
  // of up to 256 inputs (64 KiB) to an allocation: no allocation per task.
  constexpr std::size_t slab_max_input_bytes = 4096, slab_bytes = std::size_t{64} << 10;
  for (std::size_t k = 0; k < ex_.apps.size(); ++k) {
    const std::size_t bytes = ex_.apps[k].input_bytes();
    if (tasks::has_fixed_input(ex_.apps[k]) && bytes > 0 && bytes <= slab_max_input_bytes)
      small_[k].emplace(bytes, std::min<std::size_t>(256, slab_bytes / bytes));
    // Inputs too small to generate ahead and too large for a slab: made when sent,
    // straight into the frame that carries them (SecretInput).
    if (tasks::has_fixed_input(ex_.apps[k]) && !ex_.apps[k].bag && !small_[k] && bytes > 0 &&
        (bytes < tasks::InputPrefetcher::Options{}.min_prefetch_bytes || made_when_sent))
      made_on_send_[k] = std::make_shared<const model::AppSpec>(ex_.apps[k]);
  }
}

tasks::InputBuffer RootInputs::bag_input(const model::AppSpec& app, std::uint64_t index) const {
  constexpr std::uint64_t limit = net::max_payload_bytes - (std::uint64_t{64} << 10);
  std::vector<model::TaskField> fields;
  std::vector<std::byte> data;
  try {
    fields = app.bag->fields(index);
    app.bag->read_input(index, data, limit);
  } catch (const std::exception& e) {  // the task fails on its worker with this reason
    fields = {{"!error", std::string("the master could not read the task's input: ") + e.what()}};
    data.clear();
  }
  auto bytes = std::make_shared<std::vector<std::byte>>();
  tasks::write_envelope(fields, data, *bytes);
  ++bag_inputs_;
  return tasks::InputBuffer(std::move(bytes));
}

tasks::InputBuffer RootInputs::make(std::uint32_t app, std::uint64_t index) const {
  if (ex_.apps.at(app).bag) return bag_input(ex_.apps[app], index);
  auto bytes = std::make_shared<std::vector<std::byte>>();
  tasks::fill_input(ex_.apps.at(app), secret_.input_seed(app, pooled_ ? index % pool_size : index), app, 0, *bytes);
  return tasks::InputBuffer(std::move(bytes));
}

node::Payload RootInputs::payload(core::TaskId id) {
  const auto k = id.app().value;
  if (ex_.apps[k].bag) return node::share(bag_input(ex_.apps[k], id.index()));
  if (!pool_[k].empty()) return node::share(pool_[k][id.index() % pool_size]);
  if (!prefetcher_) return node::share(make(k, id.index()));
  if (small_[k]) return small_[k]->make([&](std::span<std::byte> out) { prefetcher_->fill(k, id.index(), out); });
  if (made_on_send_[k]) {
    ++made_on_send_count_;
    return std::make_shared<SecretInput>(made_on_send_[k], k, secret_.input_seed(k, id.index()));
  }
  return node::share(prefetcher_->get(k, id.index()));
}

tasks::InputBuffer RootInputs::regenerate(core::TaskId id) const { return make(id.app().value, id.index()); }

std::string RootInputs::summary() const {
  const auto made = prefetcher_ ? prefetcher_->stats() : tasks::InputPrefetcher::Stats{};
  return fmt::format("{} task inputs generated ({:.3f} s; {} ready ahead, {} waited for{}){}{}", made.generated,
                     made.generate_seconds, made.ready, made.generated_on_caller,
                     pooled_ ? "; pooled: 2 per application reused" : "",
                     made_on_send_count_ ? fmt::format("; {} made when sent, into their frames or shared slots", made_on_send_count_) : "",
                     bag_inputs_ ? fmt::format("; {} inputs of files, lines or numbers read when sent", bag_inputs_) : "");
}

}  // namespace treefarm::master
