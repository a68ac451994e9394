#include "tools/simulate/PriceNetwork.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <variant>

namespace treefarm::simulate {

PriceNetwork::PriceNetwork(const lp::PlatformModel& model, const model::Experiment& experiment,
                           const core::PolicyOptions& options)
    : model_(model) {
  lp::validate(model);
  period_ = core::PriceParams::from_options(options).period;
  for (const auto& app : model.apps) routed_ = routed_ || app.origin != 0;
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
    std::unique_ptr<core::Policy> policy;
    if (!routed_) {
      policy = core::make_policy("price", u == 0 ? options : core::PolicyOptions{});
    } else {
      // Applications from several masters (bertin2008 §2.2): each node knows where each
      // application reaches it from (its neighbour towards the application's origin).
      core::PriceRouting routing;
      routing.parent_bandwidth = u == 0 || !std::isfinite(model.nodes[u].link_bandwidth) ? 0.0 : model.nodes[u].link_bandwidth;
      for (std::size_t k = 0; k < model.apps.size(); ++k) {
        const int from = model.upstream(u, k);
        core::PriceRoute r;
        if (from < 0) r.from = core::PriceRoute::From::self;
        else if (from != model.nodes[u].parent) r = {core::PriceRoute::From::child, core::ChildId{static_cast<std::uint32_t>(from)}};
        routing.apps.push_back(r);
      }
      // Every master starts on its own: each node reads the experiment's [policy.price].
      policy = std::make_unique<core::PricePolicy>(core::PriceParams::from_options(options), std::move(routing));
    }
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
  // Σ of the local rates of each subtree (children after their parent: walk backwards).
  std::vector<std::vector<double>> below(n, std::vector<double>(kk, 0.0));
  for (std::size_t u = n; u-- > 0;) {
    const auto& local = policy(u).local_rates();
    for (std::size_t k = 0; k < kk; ++k) below[u][k] += local[k];
    if (u > 0)
      for (std::size_t k = 0; k < kk; ++k) below[static_cast<std::size_t>(model_.nodes[u].parent)][k] += below[u][k];
  }
  // Tasks/s of k over the link above v: what its subtree computes when k flows down, what
  // the rest of the tree computes when k's origin is below v (it flows up).
  auto flow = [&](std::size_t v, std::size_t k) { return model_.flows_up(v, k) ? below[0][k] - below[v][k] : below[v][k]; };
  double worst = -1;
  std::vector<double> port(n, 0.0);
  for (std::size_t u = 0; u < n; ++u) {
    const auto& local = policy(u).local_rates();
    double cpu = 0;
    for (std::size_t k = 0; k < kk; ++k)
      if (model_.can_run(u, k))
        cpu += local[k] * model_.nodes[u].task_seconds[k] * model_.apps[k].cores_per_task / model_.nodes[u].cores;
    worst = std::max(worst, cpu - 1);
    if (u == 0) continue;
    const double bw = model_.nodes[u].link_bandwidth;
    if (!std::isfinite(bw)) continue;
    double down = 0, up = 0;
    for (std::size_t k = 0; k < kk; ++k) (model_.flows_up(u, k) ? up : down) += flow(u, k) * model_.apps[k].bytes / bw;
    port[static_cast<std::size_t>(model_.nodes[u].parent)] += down;  // the sender's port
    port[u] += up;
    worst = std::max({worst, down - 1, up - 1});  // one capacity per direction
  }
  if (model_.comm_model == model::CommModel::one_port)
    for (double p : port) worst = std::max(worst, p - 1);
  return worst;
}

bool PriceNetwork::sends_up(std::size_t u) const {
  if (!routed_ || u == 0) return false;
  for (std::size_t k = 0; k < model_.apps.size(); ++k)
    if (model_.flows_up(u, k)) return true;
  return false;
}

bool PriceNetwork::has_up_link(std::size_t u) const {
  return model_.comm_model != model::CommModel::one_port && sends_up(u);
}

std::vector<std::string> PriceNetwork::price_names() const {
  std::vector<std::string> names;
  for (std::size_t u = 0; u < nodes_.size(); ++u)
    if (model_.nodes[u].cores > 0) names.push_back("lambda:" + model_.nodes[u].name);
  for (std::size_t u = 0; u < nodes_.size(); ++u) {
    if (children_[u].empty() && !sends_up(u)) continue;  // a port that sends nothing
    if (model_.comm_model == model::CommModel::one_port)
      names.push_back("port:" + model_.nodes[u].name);
    else
      for (std::size_t v : children_[u]) names.push_back("mu:" + model_.nodes[v].name);
  }
  for (std::size_t u = 0; u < nodes_.size(); ++u)
    if (has_up_link(u)) names.push_back("mu_up:" + model_.nodes[u].name);
  return names;
}

std::vector<double> PriceNetwork::prices() const {
  std::vector<double> p;
  for (std::size_t u = 0; u < nodes_.size(); ++u)
    if (model_.nodes[u].cores > 0) p.push_back(policy(u).compute_price());
  for (std::size_t u = 0; u < nodes_.size(); ++u) {
    if (children_[u].empty() && !sends_up(u)) continue;  // a port that sends nothing
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
  for (std::size_t u = 0; u < nodes_.size(); ++u)
    if (has_up_link(u)) p.push_back(policy(u).up_link_price());
  return p;
}

}  // namespace treefarm::simulate
