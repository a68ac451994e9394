#include "tools/sim/PriceNetwork.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <variant>

namespace treefarm::tools {

PriceNetwork::PriceNetwork(const lp::PlatformModel& model, const model::Experiment& experiment,
                           const core::PolicyOptions& options)
    : model_(model) {
  lp::validate(model);
  period_ = core::PriceParams::from_options(options).period;
  const std::size_t n = model.nodes.size();
  children_.resize(n);
  for (std::size_t v = 1; v < n; ++v) children_[static_cast<std::size_t>(model.nodes[v].parent)].push_back(v);
  for (std::size_t u = 0; u < n; ++u) {
    core::NodeConfig config;
    config.name = model.nodes[u].name;
    config.is_root = u == 0;
    config.one_port = model.comm_model == model::CommModel::one_port;
    config.cores = model.nodes[u].cores;
    for (std::size_t k = 0; k < model.apps.size(); ++k) {
      core::AppParams a;
      a.name = model.apps[k].name;
      a.weight = model.apps[k].weight;
      a.bytes = model.apps[k].bytes;
      a.flops = k < experiment.apps.size() ? experiment.apps[k].task_flops() : 0.0;
      a.cores_per_task = model.apps[k].cores_per_task;
      a.tasks = 1;
      config.apps.push_back(a);
      // The model's seconds per task; a node that cannot run k: +inf (never 0, "unknown").
      const double s = model.nodes[u].task_seconds.at(k);
      config.local_seconds.push_back(model.can_run(u, k) ? s : std::numeric_limits<double>::infinity());
    }
    auto policy = core::make_policy("price", u == 0 ? options : core::PolicyOptions{});
    nodes_.push_back(std::make_unique<core::NodeScheduler>(std::move(config), std::move(policy)));
  }
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t v : children_[u]) {
      const double bw = model.nodes[v].link_bandwidth;
      core::ChildInfo info{model.nodes[v].name, model.nodes[v].cores, std::isfinite(bw) ? bw : 0.0};
      (void)nodes_[u]->handle(core::event::ChildJoined{core::ChildId{static_cast<std::uint32_t>(v)}, info}, 0);
    }
    auto actions = nodes_[u]->start(0);
    collect(u, actions, carry_);
  }
}

void PriceNetwork::collect(std::size_t u, std::vector<core::Action>& actions, std::vector<Delivery>& mail) const {
  for (auto& action : actions) {
    auto* m = std::get_if<core::action::SendPolicyMessage>(&action);
    if (!m) continue;  // tasks are not simulated here
    if (m->to_parent)
      mail.push_back({static_cast<std::size_t>(model_.nodes[u].parent),
                      core::event::PolicyMessage{false, core::ChildId{static_cast<std::uint32_t>(u)}, std::move(m->payload)}});
    else
      mail.push_back({m->child.value, core::event::PolicyMessage{true, core::ChildId{}, std::move(m->payload)}});
  }
}

void PriceNetwork::step() {
  ++rounds_;
  // Far enough apart that every node is due in every round, whatever its effective period.
  const double now = static_cast<double>(rounds_) * std::max(period_, 1e6);
  std::vector<Delivery> mail = std::move(carry_);
  carry_.clear();
  for (std::size_t u = 0; u < nodes_.size(); ++u) {
    auto actions = nodes_[u]->handle(core::event::Tick{}, now);
    collect(u, actions, mail);
  }
  if (!cascade_) {
    for (auto& d : mail) {
      auto actions = nodes_[d.to]->handle(d.message, now);
      collect(d.to, actions, carry_);
    }
    return;
  }
  // Cascade: what a delivery makes a node send is delivered in the same round (a node
  // still updates at most once per round), so prices travel down the whole tree in one
  // round, as in the paper's synchronous prototype (bertin2008 §5.1.1).
  while (!mail.empty()) {
    std::vector<Delivery> next;
    for (auto& d : mail) {
      auto actions = nodes_[d.to]->handle(d.message, now);
      collect(d.to, actions, next);
    }
    mail = std::move(next);
  }
}

const core::PricePolicy& PriceNetwork::policy(std::size_t node) const {
  return dynamic_cast<const core::PricePolicy&>(nodes_.at(node)->policy());
}

std::vector<double> PriceNetwork::rates() const {
  std::vector<double> r(model_.apps.size(), 0.0);
  for (std::size_t u = 0; u < nodes_.size(); ++u) {
    const auto& local = policy(u).local_rates();
    for (std::size_t k = 0; k < r.size() && k < local.size(); ++k) r[k] += local[k];
  }
  return r;
}

std::vector<double> PriceNetwork::root_rates() const { return policy(0).global_rates(); }

double PriceNetwork::overload() const {
  const std::size_t n = nodes_.size(), kk = model_.apps.size();
  // σ of each subtree from the local rates (children after their parent: walk backwards).
  std::vector<std::vector<double>> sigma(n, std::vector<double>(kk, 0.0));
  for (std::size_t u = n; u-- > 0;) {
    const auto& local = policy(u).local_rates();
    for (std::size_t k = 0; k < kk; ++k) sigma[u][k] += local[k];
    if (u > 0)
      for (std::size_t k = 0; k < kk; ++k) sigma[static_cast<std::size_t>(model_.nodes[u].parent)][k] += sigma[u][k];
  }
  double worst = -1;
  for (std::size_t u = 0; u < n; ++u) {
    const auto& local = policy(u).local_rates();
    double cpu = 0;
    for (std::size_t k = 0; k < kk; ++k)
      if (model_.can_run(u, k))
        cpu += local[k] * model_.nodes[u].task_seconds[k] * model_.apps[k].cores_per_task / model_.nodes[u].cores;
    worst = std::max(worst, cpu - 1);
    double port = 0;
    for (std::size_t v : children_[u]) {
      const double bw = model_.nodes[v].link_bandwidth;
      if (!std::isfinite(bw)) continue;
      double link = 0;
      for (std::size_t k = 0; k < kk; ++k) link += sigma[v][k] * model_.apps[k].bytes / bw;
      port += link;
      worst = std::max(worst, link - 1);
    }
    if (model_.comm_model == model::CommModel::one_port) worst = std::max(worst, port - 1);
  }
  return worst;
}

std::vector<std::string> PriceNetwork::price_names() const {
  std::vector<std::string> names;
  for (std::size_t u = 0; u < nodes_.size(); ++u)
    if (model_.nodes[u].cores > 0) names.push_back("lambda:" + model_.nodes[u].name);
  for (std::size_t u = 0; u < nodes_.size(); ++u) {
    if (children_[u].empty()) continue;
    if (model_.comm_model == model::CommModel::one_port)
      names.push_back("port:" + model_.nodes[u].name);
    else
      for (std::size_t v : children_[u]) names.push_back("mu:" + model_.nodes[v].name);
  }
  return names;
}

std::vector<double> PriceNetwork::prices() const {
  std::vector<double> p;
  for (std::size_t u = 0; u < nodes_.size(); ++u)
    if (model_.nodes[u].cores > 0) p.push_back(policy(u).compute_price());
  for (std::size_t u = 0; u < nodes_.size(); ++u) {
    if (children_[u].empty()) continue;
    if (model_.comm_model == model::CommModel::one_port) {
      p.push_back(policy(u).port_price());
    } else {
      const auto mu = policy(u).link_prices(nodes_[u]->state());
      for (std::size_t v : children_[u]) {
        const auto it = mu.find(model_.nodes[v].name);
        p.push_back(it == mu.end() ? 0.0 : it->second);
      }
    }
  }
  return p;
}

}  // namespace treefarm::tools
