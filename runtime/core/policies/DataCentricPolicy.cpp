#include "runtime/core/policies/DataCentricPolicy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/core/policies/BandwidthCentric.hpp"
#include "runtime/core/ByteCodec.hpp"

namespace treefarm::core {

namespace {
constexpr double change_tolerance = 0.05;     // relative change that is worth a message

bool close(double a, double b) { return rates_close(a, b, change_tolerance); }
bool close(const std::vector<double>& a, const std::vector<double>& b) { return rates_close(a, b, change_tolerance); }
bool same_summary(const SubtreeSummary& a, const SubtreeSummary& b) {
  return close(a.capacity, b.capacity) && close(a.absorbable, b.absorbable) && close(a.load, b.load) &&
         close(a.efficiency, b.efficiency) && a.under_utilized == b.under_utilized && a.cannot_keep_up == b.cannot_keep_up;
}
bool same_plan(const NodePlan& a, const NodePlan& b) { return plans_close(a, b, change_tolerance); }

struct Decoded {
  DataCentricPolicy::Kind kind{};
  SubtreeSummary summary;
  std::vector<double> rates;
};

// Decodes (and checks) a payload; throws DecodeError.
Decoded decode(const std::vector<std::uint8_t>& payload, std::size_t k) {
  ByteReader r(payload);
  Decoded d;
  d.kind = static_cast<DataCentricPolicy::Kind>(DataCentricPolicy::read_head(r, k, "data-centric"));
  auto vec = [&] {
    std::vector<double> v;
    for (std::size_t a = 0; a < k; ++a) v.push_back(DataCentricPolicy::read_non_negative(r, "data-centric", "rate"));
    return v;
  };
  if (d.kind == DataCentricPolicy::Kind::summary) {
    d.summary.capacity = vec();
    d.summary.absorbable = vec();
    d.summary.load = vec();
    d.summary.efficiency = r.f64();
    if (!(d.summary.efficiency > 0 && d.summary.efficiency <= 1)) throw DecodeError("summary efficiency outside (0, 1]");
    const auto flags = r.u8();
    if (flags > 3) throw DecodeError("unknown summary flags " + std::to_string(flags));
    d.summary.under_utilized = (flags & 1) != 0;
    d.summary.cannot_keep_up = (flags & 2) != 0;
  } else {
    d.rates = vec();
  }
  if (!r.done()) throw DecodeError("trailing bytes after a data-centric message");
  return d;
}

std::vector<PlannerApp> planner_apps(const NodeState& state) {
  std::vector<PlannerApp> apps;
  for (const auto& a : state.config.apps) apps.push_back(PlannerApp{a.weight, a.bytes, a.flops});
  return apps;
}
}  // namespace

std::vector<std::uint8_t> DataCentricPolicy::encode_summary(const SubtreeSummary& s) {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(Kind::summary));
  w.u32(static_cast<std::uint32_t>(s.capacity.size()));
  for (const auto* v : {&s.capacity, &s.absorbable, &s.load})
    for (std::size_t a = 0; a < s.capacity.size(); ++a) w.f64(a < v->size() ? (*v)[a] : 0.0);
  w.f64(s.efficiency);
  w.u8(static_cast<std::uint8_t>((s.under_utilized ? 1 : 0) | (s.cannot_keep_up ? 2 : 0)));
  return w.take();
}

std::vector<std::uint8_t> DataCentricPolicy::encode_rates(const std::vector<double>& rates) {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(Kind::rates));
  w.u32(static_cast<std::uint32_t>(rates.size()));
  for (double r : rates) w.f64(r);
  return w.take();
}

DataCentricPolicy::DataCentricPolicy(Seconds report_interval) : interval_(report_interval) {}

const SubtreeSummary* DataCentricPolicy::child_summary(ChildId child) const {
  auto it = children_.find(child);
  return it == children_.end() || !it->second.summary ? nullptr : &*it->second.summary;
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

std::optional<Assignment> DataCentricPolicy::unplanned_select(const NodeState& state) {
  return BandwidthCentric::oldest_task_best_request(state);
}

std::optional<std::string> DataCentricPolicy::check_message(const NodeState& state, const event::PolicyMessage& m) const {
  return check_direction(
      m, [&](const std::vector<std::uint8_t>& payload) { return decode(payload, state.config.apps.size()).kind == Kind::rates; },
      "a data-centric summary", "data-centric rates");
}

void DataCentricPolicy::adopt(const NodeState& state, NodePlan plan) {
  if (follower_.plan() && same_plan(*follower_.plan(), plan)) return;  // keep the 1D counts
  follower_.set_plan(std::move(plan));
  plan_mix_ = LoadBalancer1D(follower_.totals(state.config.apps.size()));
}

void DataCentricPolicy::observe(const NodeState& state, const Event& event) {
  std::uint32_t local_requests = 0;
  for (const auto& r : state.requests) local_requests += r.from.local ? 1 : 0;
  count_finished(event);
  cores_ = std::max(cores_, local_requests + local_running_);
  if (const auto* left = std::get_if<event::ChildLeft>(&event)) children_.erase(left->child);
  if (const auto* m = std::get_if<event::PolicyMessage>(&event)) {
    auto d = decode(m->payload, state.config.apps.size());  // checked by check_message
    if (m->from_parent) {
      demand_ = std::move(d.rates);
    } else if (state.children.contains(m->child)) {
      children_[m->child].summary = std::move(d.summary);
    }
  }
}

// §4.5 on the local star: this node (view_[0]) and one node per child, described only by
// the child's summary and the link to it. Up: capacity and absorbable are propagated from
// the children's; down: the parent's rates are split among the executor and the children.
void DataCentricPolicy::recompute(const NodeState& state) {
  const auto apps = planner_apps(state);
  const std::size_t k = apps.size();
  if (k == 0) return;
  view_.clear();
  view_.push_back(ViewNode{state.config.name, -1, 0.0, own_rates(state)});
  std::vector<ChildId> ids;
  std::vector<const SubtreeSummary*> kids;
  for (const auto& [id, c] : state.children) {
    const auto* s = child_summary(id);
    std::vector<double> rate(k, 0.0);
    if (s)
      for (std::size_t a = 0; a < k; ++a) rate[a] = s->capacity[a] * s->efficiency;
    view_.push_back(ViewNode{c.info.name, 0, c.bandwidth, std::move(rate)});
    ids.push_back(id);
    kids.push_back(s);
  }
  const std::size_t n = view_.size();

  // Up: the bandwidth-centric capacity of the subtree for each application alone.
  SubtreeSummary sum;
  sum.capacity.assign(k, 0.0);
  for (std::size_t a = 0; a < k; ++a) {
    std::vector<ViewNode> alone = view_;
    for (auto& v : alone) v.rate = {v.rate[a]};
    sum.capacity[a] = DataCentricPlanner::plan(alone, {apps[a]}, state.config.one_port).totals[0];
  }

  // Down: the rates of the executor and of each child.
  std::vector<std::vector<double>> alpha(n, std::vector<double>(k, 0.0));  // [0]: local; [i]: sent to child i
  bool planned = false;
  double reach = 1;  // multiple of the parent's mix reachable here
  if (state.config.is_root) {
    result_ = DataCentricPlanner::plan(view_, apps, state.config.one_port);
    planned = *std::max_element(result_->totals.begin(), result_->totals.end()) > 0;
    if (planned) {
      double fair = std::numeric_limits<double>::infinity();
      for (std::size_t a = 0; a < k; ++a) fair = std::min(fair, result_->totals[a] / apps[a].weight);
      planned_fair_ = fair;
      alpha[0] = result_->alpha[0];
      for (std::size_t i = 1; i < n; ++i) alpha[i] = result_->sent[i];
    }
  } else if (demand_) {
    // The parent's rates as weights: the planner balances α(k)/demand(k); then each
    // application is cut to what was asked. Applications not asked for (or that this
    // subtree cannot compute) are left out.
    std::vector<std::size_t> active;
    std::vector<PlannerApp> sub_apps;
    for (std::size_t a = 0; a < k; ++a)
      if ((*demand_)[a] > 0 && sum.capacity[a] > 0) {
        active.push_back(a);
        sub_apps.push_back(PlannerApp{(*demand_)[a], apps[a].bytes, apps[a].flops});
      }
    planned = true;
    if (!active.empty()) {
      std::vector<ViewNode> sub = view_;
      for (auto& v : sub) {
        std::vector<double> r;
        for (auto a : active) r.push_back(v.rate[a]);
        v.rate = std::move(r);
      }
      result_ = DataCentricPlanner::plan(sub, sub_apps, state.config.one_port);
      reach = std::numeric_limits<double>::infinity();
      double occupation = 0;  // of the capacity simplex, by the asked mix
      for (std::size_t j = 0; j < active.size(); ++j) {
        const auto a = active[j];
        reach = std::min(reach, result_->totals[j] / (*demand_)[a]);
        occupation += (*demand_)[a] / sum.capacity[a];
        const double cut = result_->totals[j] > (*demand_)[a] ? (*demand_)[a] / result_->totals[j] : 1.0;
        alpha[0][a] = result_->alpha[0][j] * cut;
        for (std::size_t i = 1; i < n; ++i) alpha[i][a] = result_->sent[i][j] * cut;
      }
      // The planner stops within its 5% balance, so a reach within 5% of the simplex is
      // taken as the simplex itself (a leaf is exactly one).
      const double e = reach * occupation;
      sum.efficiency = e >= 1 - change_tolerance ? 1.0 : std::clamp(e, 1e-6, 1.0);
      sum.cannot_keep_up = reach < 1 - change_tolerance;
    }
  }

  // Up: what is computed and what could still be absorbed, per application: the free CPU
  // here, plus each child's absorbable bounded by the residual share of the port (one-port)
  // or of the link (multi-port) — the minimum residual bandwidth along the path, one link
  // at a time.
  sum.load.assign(k, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t a = 0; a < k; ++a) sum.load[a] += alpha[i][a];
  double cpu = 0;
  for (std::size_t a = 0; a < k; ++a)
    if (view_[0].rate[a] > 0) cpu += alpha[0][a] / view_[0].rate[a];
  const double free_cpu = std::max(0.0, 1.0 - cpu);
  std::vector<double> link(n, 0.0);  // share of each link in use
  double port = 0;
  for (std::size_t i = 1; i < n; ++i) {
    if (view_[i].bandwidth > 0)
      for (std::size_t a = 0; a < k; ++a) link[i] += alpha[i][a] * apps[a].bytes / view_[i].bandwidth;
    port += link[i];
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 1; i < n; ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return view_[x].bandwidth > view_[y].bandwidth; });
  sum.absorbable.assign(k, 0.0);
  for (std::size_t a = 0; a < k; ++a) {
    double e = view_[0].rate[a] * free_cpu;
    double port_left = std::max(0.0, 1.0 - port);
    for (auto i : order) {
      const auto* s = kids[i - 1];
      if (!s) continue;
      double g = s->absorbable[a];
      if (apps[a].bytes > 0) {
        if (!(view_[i].bandwidth > 0)) continue;
        const double cost = apps[a].bytes / view_[i].bandwidth;  // link seconds per task
        const double share = state.config.one_port ? port_left : std::max(0.0, 1.0 - link[i]);
        g = std::min(g, share / cost);
        if (state.config.one_port) port_left = std::max(0.0, port_left - g * cost);
      }
      e += g;
    }
    sum.absorbable[a] = e;
    sum.under_utilized |= sum.capacity[a] > 0 && e > change_tolerance * sum.capacity[a];
  }
  summary_ = sum;

  if (planned) {
    NodePlan plan;
    plan.local = alpha[0];
    for (std::size_t i = 1; i < n; ++i) plan.children[view_[i].name] = alpha[i];
    adopt(state, std::move(plan));
    for (std::size_t i = 1; i < n; ++i) {
      auto& sent = children_[ids[i - 1]].rates_sent;
      if (sent && close(*sent, alpha[i])) continue;
      sent = alpha[i];
      outbox_.push_back(action::SendPolicyMessage{false, ids[i - 1], encode_rates(alpha[i])});
    }
  }
  if (!state.config.is_root && (!summary_sent_ || !same_summary(*summary_sent_, summary_))) {
    summary_sent_ = summary_;
    outbox_.push_back(action::SendPolicyMessage{true, ChildId{}, encode_summary(summary_)});
  }
}

// The time scale of this node: its slowest task or transfer (seconds). Recomputing more
// often than every few of those changes nothing but costs planner runs (in a simulation
// of a platform whose tasks take minutes, 0.25 s would mean a recomputation per event).
Seconds DataCentricPolicy::effective_interval(const NodeState& state) const {
  Seconds scale = 0;
  for (std::size_t k = 0; k < state.config.apps.size(); ++k) {
    if (k < state.local_seconds.size()) scale = std::max(scale, state.local_seconds[k]);
    for (const auto& [id, c] : state.children)
      if (c.bandwidth > 0) scale = std::max(scale, state.config.apps[k].bytes / c.bandwidth);
  }
  return std::max(interval_, 2 * scale);
}

void DataCentricPolicy::take_messages(const NodeState& state, std::vector<Action>& out) {
  // §4.5: "these frequencies are continuously recomputed": at most once per interval.
  if (gate_.pass(state.now, effective_interval(state))) recompute(state);
  for (auto& a : outbox_) out.push_back(std::move(a));
  outbox_.clear();
}

std::optional<Seconds> DataCentricPolicy::next_deadline(const NodeState&) const { return gate_.due(); }

}  // namespace treefarm::core
