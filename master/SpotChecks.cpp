#include "master/SpotChecks.hpp"

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tasks/Checksum.hpp"
#include "tasks/TaskRunner.hpp"

namespace treefarm::master {

void SpotChecks::install(node::RootSetup& root) {
  root.check_result = [this](const net::msg::Result& r, const std::string& via) { return check(r, via); };
  root.convict = [this](const std::string& culprit, const std::string& via, bool whole_child) {
    ++convicted_;
    auto redo = record_.revoke(culprit, via, whole_child);
    redone_ += redo.size();
    spdlog::error("master: convicted '{}' of forging ({}): disconnected, {} results redone", culprit,
                  whole_child ? "held responsible for everything through it" : "its honest ancestors keep their results",
                  redo.size());
    return redo;
  };
}

node::ResultVerdict SpotChecks::check(const net::msg::Result& r, const std::string& via) {
  node::ResultVerdict verdict;
  const core::TaskId id{r.task_id};
  const std::uint32_t k = id.app().value;
  ++from_children_;
  // A command is re-run here only if the experiment says it is deterministic.
  const bool checkable = ex_.apps[k].kernel != model::Kernel::command || ex_.apps[k].spot_check;
  if (!r.failed && checkable && inputs_.secret().spot_checked(k, id.index(), fraction_)) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto input = inputs_.regenerate(id);
    double expected = 0;
    try {
      expected = tasks::run_task(ex_.apps[k], *input, nullptr, id.index());
    } catch (const std::exception& e) {  // a command that fails here proves nothing about the child
      spdlog::warn("master: spot check of task {} of '{}' could not run here: {}", id.index(), ex_.apps[k].name, e.what());
      record_.arrived_via(r.task_id, via);
      return verdict;
    }
    check_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++checked_;
    if (!tasks::checksum_matches(expected, r.checksum, ex_.apps[k])) {
      verdict.forged = true;  // the driver finds the forger below `via` and calls convict
      spdlog::error("master: spot check caught child '{}' passing a forged result (task {} of '{}', node '{}', "
                    "checksum {} instead of {})",
                    via, id.index(), ex_.apps[k].name, r.node, r.checksum, expected);
      return verdict;
    }
  }
  record_.arrived_via(r.task_id, via);
  return verdict;
}

std::string SpotChecks::summary() const {
  return fmt::format("{} of {} results from children recomputed ({:.2f} %, {:.3f} s), {} nodes convicted of forging, "
                     "{} results redone",
                     checked_, from_children_,
                     from_children_ ? 100.0 * static_cast<double>(checked_) / static_cast<double>(from_children_) : 0.0,
                     check_seconds_, convicted_, redone_);
}

}  // namespace treefarm::master
