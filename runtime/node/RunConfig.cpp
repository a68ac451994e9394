#include "runtime/node/RunConfig.hpp"

#include <cstdio>

namespace treefarm::node {

/// The fields an application and its wire form name alike, copied from one to the other.
template <class From, class To>
void copy_named_alike(const From& from, To& to) {
  to.name = from.name;
  to.n = from.n;
  to.weight = from.weight;
  to.tasks = from.tasks;
  to.cores_per_task = from.cores_per_task;
  to.memory_per_task = from.memory_per_task;
  to.disk_per_task = from.disk_per_task;
  to.min_speed = from.min_speed;
  to.argv = from.argv;
  to.timeout = from.timeout;
  to.expect_digest = from.expect_digest;
  to.task_fields = from.task_fields;
}

model::AppSpec app_from_wire(const net::msg::AppInfo& info) {
  model::AppSpec a;
  copy_named_alike(info, a);
  a.kernel = static_cast<model::Kernel>(info.kernel);
  a.send_output = info.max_output_bytes > 0;
  if (a.send_output) a.max_output_bytes = info.max_output_bytes;
  a.bytes = info.bytes;
  a.flops = info.flops;
  if (a.kernel == model::Kernel::matmul || a.kernel == model::Kernel::matadd) a.bytes = 0;
  return a;
}

net::msg::AppInfo app_to_wire(const model::AppSpec& app) {
  net::msg::AppInfo info;
  copy_named_alike(app, info);
  info.kernel = static_cast<std::uint8_t>(app.kernel);
  info.bytes = app.input_bytes();
  info.flops = app.task_flops();
  if (app.send_output) info.max_output_bytes = app.max_output_bytes;
  return info;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

std::string wire_text(std::string text, std::size_t limit) {
  if (text.size() > limit) {
    text.resize(limit - 3);
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();  // no split UTF-8
    if (!text.empty() && (static_cast<unsigned char>(text.back()) & 0x80)) text.pop_back();
    text += "...";
  }
  return text;
}

std::string RunConfig::task_text(std::uint64_t task_id) const {
  const core::TaskId id{task_id};
  const auto k = id.app().value;
  return "task " + std::to_string(id.index()) + (k < apps_.size() ? " of '" + apps_[k].name + "'" : std::string());
}

core::NodeConfig RunConfig::apply(const net::msg::Welcome& w, const NodeTraits& node,
                                  const std::vector<model::AppSpec>* root_apps,
                                  const std::vector<std::vector<bool>>* done_before, const Logger& log) {
  const bool is_root = root_apps != nullptr;
  welcome_ = w;
  apps_.clear();
  core::NodeConfig config;
  config.is_root = is_root;
  config.buffer = w.buffer;
  config.one_port = w.one_port;
  config.name = node.name;
  config.max_task_losses = node.max_task_losses;
  if (done_before) config.done_before = *done_before;
  config.deadline_factor = node.task_deadline_factor;
  config.deadline_floor = node.task_deadline_floor;
  config.migration = node.migration;
  config.balance = node.balance;
  config.cores = node.cores;
  config.memory = node.memory;
  config.disk = node.disk;
  config.speed = node.speed;
  apps_.reserve(w.apps.size());  // exactly: a simulated tree holds one of each per node
  config.apps.reserve(w.apps.size());
  for (const auto& info : w.apps) {
    apps_.push_back(is_root ? root_apps->at(apps_.size()) : app_from_wire(info));
    core::AppParams p;
    p.name = info.name;
    p.weight = info.weight;
    p.tasks = info.tasks;
    p.bytes = static_cast<double>(info.bytes);
    p.flops = info.flops;
    p.cores_per_task = info.cores_per_task;
    p.memory_per_task = info.memory_per_task;
    p.disk_per_task = info.disk_per_task;
    p.min_speed = info.min_speed;
    config.apps.push_back(p);
  }
  hint_bandwidth_.clear();
  std::vector<const net::msg::NodeHint*> hints;
  for (const auto& h : w.hints) hints.push_back(&h);
  if (node.known_hints)
    for (const auto& h : *node.known_hints) hints.push_back(&h);
  for (const auto* h : hints) {
    if (h->name == node.name) {
      config.local_seconds = h->task_seconds;
      if (!h->alpha.empty()) {  // the LP's rates (papers/beaumont2006 §4.1)
        core::NodePlan plan;
        plan.local = h->alpha;
        for (const auto* c : hints)
          if (c->name != node.name) plan.children[c->name] = c->received;
        config.plan = std::move(plan);
      }
    }
    hint_bandwidth_[h->name] = h->link_bandwidth;
  }
  // Say so when the LP leaves this node idle: under lp it then gets no task while a
  // planned node is connected (docs/policies.md, lp), which a user would otherwise take
  // for a fault. Idle: what its parent is planned to send it is under 1e-4 of the plan's
  // total (without_crumbs).
  if (w.policy == "lp" && !is_root && w.calibrate_reps == 0) {
    double mine = -1, total = 0;
    for (const auto* h : hints) {
      for (double a : h->alpha) total += a;
      if (h->name == node.name && !h->received.empty()) {
        mine = 0;
        for (double r : h->received) mine += r;
      }
    }
    if (mine >= 0 && total > 0 && mine < 1e-4 * total)
      log.info("{}: the LP's plan gives this node no tasks: it stays idle while a planned node is connected "
               "(policy lp, docs/policies.md)", node.name);
  }
  return config;
}

}  // namespace treefarm::node
