#include "runtime/core/DataCentricPolicy.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "runtime/core/BandwidthCentric.hpp"
#include "runtime/core/ByteCodec.hpp"

namespace treefarm::core {

namespace {
constexpr double change_tolerance = 0.05;     // relative change that is worth a message
constexpr std::uint32_t max_view_nodes = 100'000;
constexpr std::uint32_t max_apps = 1'000;

bool close(double a, double b) {
  return std::abs(a - b) <= change_tolerance * std::max(std::abs(a), std::abs(b)) + 1e-12;
}
bool close(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!close(a[i], b[i])) return false;
  return true;
}
bool same_view(const std::vector<ViewNode>& a, const std::vector<ViewNode>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].parent != b[i].parent || !close(a[i].bandwidth, b[i].bandwidth) ||
        !close(a[i].rate, b[i].rate))
      return false;
  return true;
}
bool same_plan(const NodePlan& a, const NodePlan& b) {
  if (!close(a.local, b.local) || a.children.size() != b.children.size()) return false;
  for (const auto& [name, rates] : a.children) {
    auto it = b.children.find(name);
    if (it == b.children.end() || !close(rates, it->second)) return false;
  }
  return true;
}

std::vector<std::uint8_t> encode_report(const std::vector<ViewNode>& nodes, std::size_t k) {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(DataCentricPolicy::Kind::report));
  w.u32(static_cast<std::uint32_t>(k));
  w.u32(static_cast<std::uint32_t>(nodes.size()));
  for (const auto& n : nodes) {
    w.str(n.name);
    w.u32(static_cast<std::uint32_t>(n.parent + 1));
    w.f64(n.bandwidth);
    for (double r : n.rate) w.f64(r);
  }
  return w.take();
}

struct NamedPlan {
  std::string name;
  NodePlan plan;
};

std::vector<std::uint8_t> encode_plans(const std::vector<NamedPlan>& plans, std::size_t k) {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(DataCentricPolicy::Kind::plan));
  w.u32(static_cast<std::uint32_t>(k));
  w.u32(static_cast<std::uint32_t>(plans.size()));
  for (const auto& p : plans) {
    w.str(p.name);
    for (std::size_t a = 0; a < k; ++a) w.f64(a < p.plan.local.size() ? p.plan.local[a] : 0.0);
    w.u32(static_cast<std::uint32_t>(p.plan.children.size()));
    for (const auto& [name, rates] : p.plan.children) {
      w.str(name);
      for (std::size_t a = 0; a < k; ++a) w.f64(a < rates.size() ? rates[a] : 0.0);
    }
  }
  return w.take();
}

double non_negative(ByteReader& r) {
  const double v = r.f64();
  if (v < 0) throw DecodeError("policy message holds a negative rate or bandwidth");
  return v;
}

// Decodes (and checks) a payload; throws DecodeError.
struct Decoded {
  DataCentricPolicy::Kind kind{};
  std::vector<ViewNode> report;
  std::vector<NamedPlan> plans;
};

Decoded decode(const std::vector<std::uint8_t>& payload, std::size_t k) {
  ByteReader r(payload);
  Decoded d;
  const auto kind = r.u8();
  if (kind != 1 && kind != 2) throw DecodeError("unknown data-centric message kind " + std::to_string(kind));
  d.kind = static_cast<DataCentricPolicy::Kind>(kind);
  const auto apps = r.count(max_apps);
  if (apps != k) throw DecodeError("message for " + std::to_string(apps) + " applications, this run has " + std::to_string(k));
  const auto n = r.count(max_view_nodes);
  if (d.kind == DataCentricPolicy::Kind::report) {
    if (n == 0) throw DecodeError("an empty report");
    for (std::uint32_t i = 0; i < n; ++i) {
      ViewNode v;
      v.name = r.str();
      v.parent = static_cast<int>(r.count(max_view_nodes)) - 1;
      if (i == 0 ? v.parent != -1 : (v.parent < 0 || static_cast<std::uint32_t>(v.parent) >= i))
        throw DecodeError("report node " + std::to_string(i) + " has a bad parent");
      v.bandwidth = non_negative(r);
      for (std::size_t a = 0; a < k; ++a) v.rate.push_back(non_negative(r));
      d.report.push_back(std::move(v));
    }
  } else {
    for (std::uint32_t i = 0; i < n; ++i) {
      NamedPlan p;
      p.name = r.str();
      for (std::size_t a = 0; a < k; ++a) p.plan.local.push_back(non_negative(r));
      const auto c = r.count(max_view_nodes);
      for (std::uint32_t j = 0; j < c; ++j) {
        auto name = r.str();
        std::vector<double> rates;
        for (std::size_t a = 0; a < k; ++a) rates.push_back(non_negative(r));
        p.plan.children[name] = std::move(rates);
      }
      d.plans.push_back(std::move(p));
    }
  }
  if (!r.done()) throw DecodeError("trailing bytes after a data-centric message");
  return d;
}
}  // namespace

DataCentricPolicy::DataCentricPolicy(Seconds report_interval) : interval_(report_interval) {}

void DataCentricPolicy::start(const NodeState& state) {
  Policy::start(state);
}

std::vector<double> DataCentricPolicy::own_rates(const NodeState& state) const {
  const auto& apps = state.config.apps;
  const std::size_t k = apps.size();
  std::vector<double> seconds(k, 0.0);
  double known_sum = 0;
  int known = 0;
  std::optional<std::size_t> ref;  // a known app with c(k) > 0 to scale from
  for (std::size_t a = 0; a < k; ++a) {
    seconds[a] = a < state.local_seconds.size() ? state.local_seconds[a] : 0.0;
    if (seconds[a] > 0) {
      known_sum += seconds[a];
      ++known;
      if (!ref && apps[a].flops > 0) ref = a;
    }
  }
  std::vector<double> rates(k, 0.0);
  if (cores_ == 0 || known == 0) return rates;
  for (std::size_t a = 0; a < k; ++a) {
    double s = seconds[a];
    // An application not run here yet: scaled by c(k) from one that was, else the mean.
    if (s <= 0) s = ref && apps[a].flops > 0 ? seconds[*ref] * apps[a].flops / apps[*ref].flops : known_sum / known;
    rates[a] = s > 0 ? cores_ / s : 0.0;
  }
  return rates;
}

std::vector<ViewNode> DataCentricPolicy::summary(const NodeState& state) const {
  std::vector<ViewNode> view;
  view.push_back(ViewNode{state.config.name, -1, 0.0, own_rates(state)});
  for (const auto& [id, nodes] : reports_) {
    auto child = state.children.find(id);
    if (child == state.children.end()) continue;
    const int offset = static_cast<int>(view.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      ViewNode v = nodes[i];
      v.parent = i == 0 ? 0 : v.parent + offset;
      if (i == 0) v.bandwidth = child->second.bandwidth;
      view.push_back(std::move(v));
    }
  }
  return view;
}

std::optional<AppId> DataCentricPolicy::next_source_app(const NodeState& state) {
  if (follower_.has_plan()) {
    auto k = plan_mix_.next([&](std::size_t i) { return state.source_remaining(AppId{static_cast<std::uint32_t>(i)}) > 0; });
    if (k) return AppId{static_cast<std::uint32_t>(*k)};
  }
  return Policy::next_source_app(state);
}

std::optional<Assignment> DataCentricPolicy::select(const NodeState& state) {
  if (auto a = follower_.select(state)) return a;
  // No rates yet, or no planned choice feasible: bandwidth-centric (§4.5 starts from it).
  if (state.buffer.empty()) return std::nullopt;
  auto r = BandwidthCentric::best_request(state, state.buffer.front());
  if (!r) return std::nullopt;
  return Assignment{*r, 0};
}

void DataCentricPolicy::assigned(const NodeState& state, const Target& to, TaskRef task) {
  follower_.assigned(state, to, task);
  if (to.local) ++local_running_;
}

std::optional<std::string> DataCentricPolicy::check_message(const NodeState& state, const event::PolicyMessage& m) const {
  try {
    const auto d = decode(m.payload, state.config.apps.size());
    if (m.from_parent && d.kind != Kind::plan) return "a data-centric report from the parent";
    if (!m.from_parent && d.kind != Kind::report) return "a data-centric plan from a child";
  } catch (const DecodeError& e) {
    return std::string("bad data-centric message: ") + e.what();
  }
  return std::nullopt;
}

void DataCentricPolicy::adopt(const NodeState& state, NodePlan plan) {
  if (follower_.plan() && same_plan(*follower_.plan(), plan)) return;  // keep the 1D counts
  follower_.set_plan(std::move(plan));
  plan_mix_ = LoadBalancer1D(follower_.totals(state.config.apps.size()));
}

void DataCentricPolicy::send_plans(const NodeState& state, const std::vector<ViewNode>& view,
                                   const std::vector<NodePlan>& plans) {
  // Each child gets the entries of the nodes of its subtree (the names of its report).
  const std::size_t k = state.config.apps.size();
  for (const auto& [id, nodes] : reports_) {
    if (!state.children.contains(id)) continue;
    std::set<std::string> names;
    for (const auto& n : nodes) names.insert(n.name);
    std::vector<NamedPlan> part;
    for (std::size_t u = 0; u < view.size(); ++u)
      if (names.contains(view[u].name)) part.push_back(NamedPlan{view[u].name, plans[u]});
    if (!part.empty()) outbox_.push_back(action::SendPolicyMessage{false, id, encode_plans(part, k)});
  }
}

void DataCentricPolicy::observe(const NodeState& state, const Event& event) {
  std::uint32_t local_requests = 0;
  for (const auto& r : state.requests) local_requests += r.from.local ? 1 : 0;
  if (const auto* f = std::get_if<event::LocalTaskFinished>(&event); f && local_running_ > 0) --local_running_;
  cores_ = std::max(cores_, local_requests + local_running_);
  if (const auto* left = std::get_if<event::ChildLeft>(&event)) reports_.erase(left->child);
  if (const auto* m = std::get_if<event::PolicyMessage>(&event)) {
    const auto d = decode(m->payload, state.config.apps.size());  // checked by check_message
    if (!m->from_parent) {
      reports_[m->child] = d.report;
    } else {
      // A plan for this subtree: keep our entry, pass the others down.
      std::vector<ViewNode> view;
      std::vector<NodePlan> plans;
      for (const auto& p : d.plans) {
        if (p.name == state.config.name) adopt(state, p.plan);
        view.push_back(ViewNode{p.name, -1, 0, {}});
        plans.push_back(p.plan);
      }
      send_plans(state, view, plans);
    }
  }
}

// §4.5: "these frequencies are continuously recomputed": at most once per interval.
void DataCentricPolicy::publish(const NodeState& state) {
  if (checked_ && state.now < last_check_ + interval_) {
    waiting_ = true;
    return;
  }
  checked_ = true;
  waiting_ = false;
  last_check_ = state.now;
  auto view = summary(state);
  if (published_ && same_view(view, sent_summary_)) return;
  published_ = true;
  sent_summary_ = view;
  const std::size_t k = state.config.apps.size();
  if (!state.config.is_root) {
    outbox_.push_back(action::SendPolicyMessage{true, ChildId{}, encode_report(view, k)});
    return;
  }
  std::vector<PlannerApp> apps;
  for (const auto& a : state.config.apps) apps.push_back(PlannerApp{a.weight, a.bytes, a.flops});
  result_ = DataCentricPlanner::plan(view, apps, state.config.one_port);
  std::vector<NodePlan> plans(view.size());
  for (std::size_t u = 0; u < view.size(); ++u) plans[u].local = result_->alpha[u];
  for (std::size_t u = 1; u < view.size(); ++u)
    plans[static_cast<std::size_t>(view[u].parent)].children[view[u].name] = result_->sent[u];
  if (result_->totals.empty() || *std::max_element(result_->totals.begin(), result_->totals.end()) <= 0) return;
  adopt(state, plans[0]);
  send_plans(state, view, plans);
}

void DataCentricPolicy::take_messages(const NodeState& state, std::vector<Action>& out) {
  publish(state);
  for (auto& a : outbox_) out.push_back(std::move(a));
  outbox_.clear();
}

std::optional<Seconds> DataCentricPolicy::next_deadline(const NodeState&) const {
  if (!waiting_) return std::nullopt;
  return last_check_ + interval_;
}

}  // namespace treefarm::core
