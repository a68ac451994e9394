#include "runtime/core/policies/PricePolicy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "runtime/core/ByteCodec.hpp"
#include "runtime/core/policies/FcfsPolicy.hpp"

namespace treefarm::core {

namespace {
constexpr double change_tolerance = 0.05;  // relative change of a rate worth a new plan
constexpr double control_share = 0.02;     // of a link, at most, for the policy's messages
constexpr std::size_t param_count = 15;

struct Field {
  const char* key;
  double PriceParams::*member;
};
constexpr Field fields[param_count] = {
    {"gamma_rho_tilde", &PriceParams::gamma_rho_tilde}, {"gamma_rho1", &PriceParams::gamma_rho1},
    {"gamma_rho2", &PriceParams::gamma_rho2},           {"gamma_lambda", &PriceParams::gamma_lambda},
    {"gamma_mu", &PriceParams::gamma_mu},               {"rho_init", &PriceParams::rho_init},
    {"lambda_init", &PriceParams::lambda_init},         {"mu_init", &PriceParams::mu_init},
    {"scaled", &PriceParams::scaled},                   {"alpha", &PriceParams::alpha},
    {"period", &PriceParams::period},                   {"rate_unit", &PriceParams::rate_unit},
    {"relative", &PriceParams::relative},               {"relative_gain", &PriceParams::relative_gain},
    {"relative_price_gain", &PriceParams::relative_price_gain},
};
// A relative step never falls below this fraction of the node's own rate for k (so an
// application whose rates all reached 0 can restart).
constexpr double relative_floor = 1e-3;

// Throws std::invalid_argument naming the key of a value out of range.
void check(const PriceParams& p) {
  for (const auto& f : fields) {
    const double v = p.*f.member;
    if (!std::isfinite(v) || v < 0)
      throw std::invalid_argument(std::string("[policy.price] ") + f.key + " must be a finite number >= 0, got " +
                                  std::to_string(v));
  }
  for (const auto* key : {"gamma_rho_tilde", "gamma_rho1"})
    for (const auto& f : fields)
      if (std::string_view(f.key) == key && p.*f.member > 1)
        throw std::invalid_argument(std::string("[policy.price] ") + key + " must be in [0, 1], got " +
                                    std::to_string(p.*f.member));
  if (p.scaled != 0 && p.scaled != 1)
    throw std::invalid_argument("[policy.price] scaled must be 1 (eq. 17-18) or 0 (eq. 14-15), got " + std::to_string(p.scaled));
  if (!(p.period > 0)) throw std::invalid_argument("[policy.price] period must be > 0 seconds");
  if (!(p.rate_unit > 0)) throw std::invalid_argument("[policy.price] rate_unit must be > 0 tasks/s");
  if (p.relative != 0 && p.relative != 1)
    throw std::invalid_argument("[policy.price] relative must be 1 (per-application steps) or 0 (Table 1), got " +
                                std::to_string(p.relative));
  for (const auto& [key, v] : {std::pair{"relative_gain", p.relative_gain}, std::pair{"relative_price_gain", p.relative_price_gain}})
    if (!(v > 0) || v > 1)
      throw std::invalid_argument(std::string("[policy.price] ") + key + " must be in (0, 1], got " + std::to_string(v));
}

bool close(const std::vector<double>& a, const std::vector<double>& b) { return rates_close(a, b, change_tolerance); }
bool same_plan(const NodePlan& a, const NodePlan& b) { return plans_close(a, b, change_tolerance); }

struct Decoded {
  PricePolicy::Kind kind{};
  PriceParams params;
  std::vector<double> first, second, third, fourth;  // down: η, ϱ, n_k, path capacity; up: σ, runnable, active steps
  // The routed part (applications from several masters): the other direction's values.
  std::vector<double> eta, rho, routes, capacity, sigma, runnable, active;
  bool routed = false;
};

// One direction's per-application values: down η, ϱ, n_k, capacity (0 on the wire:
// unbounded); up σ, runnable, active steps.
void read_values(ByteReader& r, std::size_t k, bool down, std::vector<double>& a, std::vector<double>& b,
                 std::vector<double>& c, std::vector<double>& d) {
  for (std::size_t i = 0; i < k; ++i) {
    a.push_back(PricePolicy::read_non_negative(r, "price", down ? "price" : "rate"));
    b.push_back(PricePolicy::read_non_negative(r, "price", down ? "rate" : "count"));
    c.push_back(PricePolicy::read_non_negative(r, "price", down ? "count" : "step"));
    if (down) {  // 0 on the wire: no bound known on the path (the codec carries finite numbers only)
      const double capacity = PricePolicy::read_non_negative(r, "price", "capacity");
      d.push_back(capacity > 0 ? capacity : std::numeric_limits<double>::infinity());
    }
  }
}

void write_values(ByteWriter& w, std::size_t k, const std::vector<double>* down, const std::vector<double>* up) {
  for (std::size_t a = 0; a < k; ++a) {
    if (down) {
      for (std::size_t f = 0; f < 3; ++f) w.f64(a < down[f].size() ? down[f][a] : 0.0);
      const double bound = a < down[3].size() ? down[3][a] : std::numeric_limits<double>::infinity();
      w.f64(std::isfinite(bound) ? bound : 0.0);  // 0: unbounded (decode() reads it back as infinity)
    } else {
      for (std::size_t f = 0; f < 3; ++f) w.f64(a < up[f].size() ? up[f][a] : 0.0);
    }
  }
}

Decoded decode(const std::vector<std::uint8_t>& payload, std::size_t k) {
  ByteReader r(payload);
  Decoded d;
  d.kind = static_cast<PricePolicy::Kind>(PricePolicy::read_head(r, k, "price"));
  if (d.kind == PricePolicy::Kind::down) {
    for (const auto& f : fields) d.params.*f.member = r.f64();
    try {
      check(d.params);
    } catch (const std::invalid_argument& e) {
      throw DecodeError(std::string("price parameters: ") + e.what());
    }
  }
  const bool down = d.kind == PricePolicy::Kind::down;
  read_values(r, k, down, d.first, d.second, d.third, d.fourth);
  if (down) d.eta = d.first, d.rho = d.second, d.routes = d.third, d.capacity = d.fourth;
  else d.sigma = d.first, d.runnable = d.second, d.active = d.third;
  if (!r.done()) {  // the routed part: marker 1, then the other direction's values
    if (r.u8() != 1) throw DecodeError("unknown extension of a price message");
    d.routed = true;
    if (down) read_values(r, k, false, d.sigma, d.runnable, d.active, d.capacity);
    else read_values(r, k, true, d.eta, d.rho, d.routes, d.capacity);
  }
  if (!r.done()) throw DecodeError("trailing bytes after a price message");
  return d;
}

// [x]^+ of the paper.
double plus(double x) { return x > 0 ? x : 0.0; }

// One price update with relative steps: gain·(usage − 1)/denom (denom: the loop gain's
// factor, counting only the routes that compute), but a price falls at most by 5% per
// update. A route leaving (ϱ_{i,k} = 0) removes its term from denom, and without this bound
// the price of a resource just saturated collapses, the route re-enters, and the two
// alternate (a limit cycle seen on links with b_k/B_c spanning orders of magnitude: a
// 2.3 GB application beside a 1 MB one on a 430 kB/s link, whose price halved in one update
// with a bound of a half, then took ~35 updates to climb back while the link
// was overloaded by up to 70%). On the 100 random trees of docs/results/price.md: 80
// within 1% with a half, 93 with a fifth, 97 with 5%.
constexpr double price_keep = 0.95;  // a price keeps at least this fraction per update
double relative_price(double price, double gain, double usage, double denom) {
  if (!(denom > 0)) return price * price_keep;
  return std::max(price + gain * (usage - 1) / denom, price * price_keep);
}

/// Algorithm 4's update of one resource's price from its usage (Σ cost·rate; 1 = full):
/// relative steps (`relative_gain`), eq. 17–18 scaled by `denom`, or eq. 14–15 unscaled.
/// A scaled update with nothing to scale by (denom = 0) keeps the price.
double updated_price(double price, double usage, double denom, double gamma, bool relative, bool scaled,
                     double relative_gain) {
  if (relative) return relative_price(price, relative_gain, usage, denom);
  if (!scaled) return plus(price + gamma * (usage - 1));
  return denom > 0 ? plus(price + gamma * (usage - 1) / denom) : price;
}
}  // namespace

std::vector<std::string> PriceParams::keys() {
  std::vector<std::string> k;
  for (const auto& f : fields) k.emplace_back(f.key);
  return k;
}

PriceParams PriceParams::from_options(const PolicyOptions& options) {
  PriceParams p;
  for (const auto& [key, value] : options) {
    const auto* f = std::find_if(std::begin(fields), std::end(fields), [&k = key](const Field& x) { return k == x.key; });
    if (f == std::end(fields)) {
      std::string known;
      for (const auto& x : fields) known += (known.empty() ? "" : ", ") + std::string(x.key);
      throw std::invalid_argument("unknown option '" + key + "' in [policy.price] (known: " + known + ")");
    }
    p.*f->member = value;
  }
  check(p);
  return p;
}

std::vector<std::uint8_t> PricePolicy::encode_down(const PriceParams& p, const std::vector<double>& eta,
                                                   const std::vector<double>& rho, const std::vector<double>& routes,
                                                   const std::vector<double>& capacity) {
  return encode(Kind::down, p, {eta, rho, routes, capacity}, {});
}

std::vector<std::uint8_t> PricePolicy::encode_up(const std::vector<double>& sigma, const std::vector<double>& runnable,
                                                 const std::vector<double>& active) {
  return encode(Kind::up, {}, {}, {sigma, runnable, active});
}

std::vector<std::uint8_t> PricePolicy::encode(Kind kind, const PriceParams& p, const DownValues& down, const UpValues& up,
                                              bool routed) {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(kind));
  const std::size_t k = kind == Kind::down ? down[0].size() : up[0].size();
  w.u32(static_cast<std::uint32_t>(k));
  if (kind == Kind::down)
    for (const auto& f : fields) w.f64(p.*f.member);
  const auto* d = down.data();
  const auto* u = up.data();
  write_values(w, k, kind == Kind::down ? d : nullptr, u);
  if (routed) {
    w.u8(1);
    write_values(w, k, kind == Kind::down ? nullptr : d, u);
  }
  return w.take();
}

PricePolicy::PricePolicy(PriceParams params, PriceRouting routing)
    : RatePlanPolicy(/*draw_on_demand=*/true), params_(params), routing_(std::move(routing)) {
  check(params_);
}

bool PricePolicy::from_self(const NodeState& state, std::size_t k) const {
  return routed() ? routing_.apps.at(k).from == PriceRoute::From::self : state.config.is_root;
}
bool PricePolicy::from_parent(const NodeState& state, std::size_t k) const {
  return routed() ? routing_.apps.at(k).from == PriceRoute::From::parent : !state.config.is_root;
}
bool PricePolicy::from_child(std::size_t k, ChildId child) const {
  return routed() && routing_.apps.at(k).from == PriceRoute::From::child && routing_.apps[k].child == child;
}
bool PricePolicy::origin_anywhere(const NodeState& state) const {
  for (std::size_t k = 0; k < state.config.apps.size(); ++k)
    if (from_self(state, k)) return true;
  return false;
}

void PricePolicy::start(const NodeState& state) {
  Policy::start(state);
  const std::size_t k = state.config.apps.size();
  if (routed() && routing_.apps.size() != k)
    throw std::invalid_argument("price: " + std::to_string(routing_.apps.size()) + " routes for " + std::to_string(k) +
                                " applications");
  rho_.assign(k, 0.0);
  rho_tilde_.assign(k, 0.0);
  rho_global_.assign(k, 0.0);
  sigma_.assign(k, 0.0);
  eta_.assign(k, 0.0);
  routes_.assign(k, 0.0);
  parent_sigma_.assign(k, 0.0);
  parent_runnable_.assign(k, 0.0);
  parent_active_.assign(k, 0.0);
  if (routed()) path_cap_.assign(k, std::numeric_limits<double>::infinity());
  cores_ = state.config.cores;
  if (state.config.is_root || origin_anywhere(state)) {  // a master: Algorithm 3 starts here
    active_ = true;
    initial_rates(state);
    for (std::size_t a = 0; a < k; ++a)
      if (from_self(state, a)) rho_global_[a] = rho_[a];
  }
}

// Table 1: ϱ_init for every application the node can run. Relative steps: the node's own
// executor shared in proportion to the weights (Σ_k a_{i,k}·ϱ_{i,k} = 1; local
// information only), so no rate starts orders of magnitude away from its scale.
void PricePolicy::initial_rates(const NodeState& state) {
  const auto a = compute_cost(state);
  const auto& apps = state.config.apps;
  double weights = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k] > 0 && std::isfinite(a[k])) weights += apps[k].weight;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (!(a[k] > 0) || !std::isfinite(a[k])) continue;
    rho_[k] = rho_tilde_[k] =
        relative() ? apps[k].weight / weights * local_capacity(a, k) : params_.rho_init * params_.rate_unit;
  }
}

// min(1/a_{i,k}, the path's capacity for k): the most tasks/s of k this node could compute
// (0 if it cannot run k; +inf while its task duration is unknown and the path unbounded).
double PricePolicy::local_capacity(const std::vector<double>& a, std::size_t k) const {
  const double own = std::isinf(a[k]) ? 0.0 : a[k] > 0 ? 1.0 / a[k] : std::numeric_limits<double>::infinity();
  return k < path_cap_.size() ? std::min(own, path_cap_[k]) : own;
}

// a_{i,k}: seconds of the whole executor per task of k (1/r_{i,k}); 0 when the node cannot
// run k or does not know its duration yet; +inf when it cannot run k at all.
std::vector<double> PricePolicy::compute_cost(const NodeState& state) const {
  const auto& apps = state.config.apps;
  std::vector<double> a(apps.size(), 0.0);
  for (std::size_t k = 0; k < apps.size(); ++k) {
    const std::uint32_t slots = apps[k].cores_per_task > 0 ? cores_ / apps[k].cores_per_task : 0;
    const double s = k < state.local_seconds.size() ? state.local_seconds[k] : 0.0;
    if (slots == 0 || std::isinf(s)) a[k] = std::numeric_limits<double>::infinity();
    else if (s > 0) a[k] = s / slots;
  }
  return a;
}

std::map<std::string, double> PricePolicy::link_prices(const NodeState& state) const {
  std::map<std::string, double> out;
  for (const auto& [id, c] : children_)
    if (auto it = state.children.find(id); it != state.children.end()) out[it->second.info.name] = c.mu;
  return out;
}

std::optional<std::string> PricePolicy::check_message(const NodeState& state, const event::PolicyMessage& m) const {
  return check_direction(
      m, [&](const std::vector<std::uint8_t>& payload) { return decode(payload, state.config.apps.size()).kind == Kind::down; },
      "a price report (up)", "prices (down)");
}

void PricePolicy::observe(const NodeState& state, const Event& event) {
  std::uint32_t local_requests = 0;
  for (const auto& r : state.requests) local_requests += r.from.local ? 1 : 0;
  count_finished(event);
  cores_ = std::max({cores_, state.config.cores, local_requests + local_running_});
  if (const auto* left = std::get_if<event::ChildLeft>(&event)) children_.erase(left->child);
  if (const auto* m = std::get_if<event::PolicyMessage>(&event)) {
    auto d = decode(m->payload, state.config.apps.size());  // checked by check_message
    if (!routed()) {
      if (m->from_parent) {
        fresh_ = true;
        params_ = d.params;
        eta_ = std::move(d.first);
        rho_global_ = std::move(d.second);
        routes_ = std::move(d.third);
        path_cap_ = std::move(d.fourth);
        if (!active_) {  // Algorithm 3 starts on the first prices from the parent
          active_ = true;
          initial_rates(state);
        }
      } else if (state.children.contains(m->child)) {
        auto& c = children_[m->child];
        c.sigma = std::move(d.first);
        c.runnable = std::move(d.second);
        c.active_steps = std::move(d.third);
      }
      return;
    }
    // Routed (applications from several masters, bertin2008 §2.2): per application, the
    // values of the direction it flows in. A message from an upstream neighbour of some
    // application starts Algorithm 3 and asks for an update, as the parent's does.
    if (!m->from_parent && !state.children.contains(m->child)) return;
    const std::size_t kk = state.config.apps.size();
    auto fill = [&](std::vector<double>& v, const std::vector<double>& from, std::size_t k) {
      v[k] = k < from.size() ? from[k] : 0.0;
    };
    Child* c = m->from_parent ? nullptr : &children_[m->child];
    if (c) {
      c->sigma.assign(kk, 0.0);
      c->runnable.assign(kk, 0.0);
      c->active_steps.assign(kk, 0.0);
    }
    bool upstream = false;
    for (std::size_t k = 0; k < kk; ++k) {
      const bool from_up = m->from_parent ? from_parent(state, k) : from_child(k, m->child);
      if (from_up) {
        upstream = true;
        fill(eta_, d.eta, k);
        fill(rho_global_, d.rho, k);
        fill(routes_, d.routes, k);
        path_cap_[k] = k < d.capacity.size() ? d.capacity[k] : std::numeric_limits<double>::infinity();
      } else if (m->from_parent) {
        fill(parent_sigma_, d.sigma, k);
        fill(parent_runnable_, d.runnable, k);
        fill(parent_active_, d.active, k);
      } else {
        fill(c->sigma, d.sigma, k);
        fill(c->runnable, d.runnable, k);
        fill(c->active_steps, d.active, k);
      }
    }
    if (m->from_parent) params_ = d.params;
    if (upstream) {
      fresh_ = true;
      if (!active_) {
        active_ = true;
        initial_rates(state);
      }
    }
  }
}

// One update of Algorithms 3 and 4 on this node, with the latest values of its neighbours.
void PricePolicy::update(const NodeState& state) {
  const double unit = params_.rate_unit;  // see PriceParams::rate_unit
  const double gamma_rho2 = params_.gamma_rho2 * unit, gamma_lambda = params_.gamma_lambda / unit,
               gamma_mu = params_.gamma_mu / unit;
  const auto& apps = state.config.apps;
  const std::size_t kk = apps.size();
  const auto a = compute_cost(state);
  const bool scaled = params_.scaled != 0;
  for (const auto& [id, c] : state.children) children_.try_emplace(id);
  // Initial prices (Table 1), per unit of capacity: the price of the whole executor or
  // link for one second, in the rate unit (docs/policies.md#price).
  const bool rel = relative();
  if (!lambda_set_ && std::any_of(a.begin(), a.end(), [](double x) { return x > 0 && std::isfinite(x); })) {
    lambda_ = rel ? 0.0 : params_.lambda_init / unit;
    lambda_set_ = true;
  }
  double max_bw = 0;
  for (auto& [id, c] : children_) {
    const auto it = state.children.find(id);
    if (it == state.children.end() || !(it->second.bandwidth > 0)) continue;
    max_bw = std::max(max_bw, it->second.bandwidth);
    if (!c.mu_set) {
      c.mu = rel ? 0.0 : params_.mu_init / unit;
      c.mu_set = true;
    }
  }
  if (!port_set_ && max_bw > 0) {
    port_price_ = rel ? 0.0 : params_.mu_init / unit;
    port_set_ = true;
  }

  // γ_ϱ^(2) per application: Table 1's (in rate_unit), or relative (bertin2008 §6): g
  // times the order of magnitude of ϱ_{i,k}: the mean ϱ_k/n_k over the n_k nodes that can
  // run k, at most what this node could compute (its executor, and the path's capacity
  // its parent sent down), at least a small fraction of it. `slope` is (ϱ_k/w_k)^α, the
  // factor of p in eq. 16's normalised update.
  std::vector<double> step(kk, gamma_rho2), slope(kk, 0.0);
  for (std::size_t k = 0; k < kk; ++k) {
    const double x = rho_global_[k] / apps[k].weight;
    slope[k] = params_.alpha == 1 ? x : std::pow(x, params_.alpha);
    if (!rel) continue;
    const double n = k < routes_.size() && routes_[k] >= 1 ? routes_[k] : 1.0;
    const double cap = local_capacity(a, k);
    const double low = std::isfinite(cap) ? relative_floor * cap : 0.0;
    step[k] = params_.relative_gain * std::clamp(rho_global_[k] / n, low, cap);
  }
  // Algorithm 3: eq. 10, 11 and 16 (U_k(ϱ) = w_k·U(ϱ/w_k), normalised by (ϱ_k/w_k)^α).
  for (std::size_t k = 0; k < kk; ++k) {
    if (std::isinf(a[k])) {
      rho_[k] = rho_tilde_[k] = 0;
      continue;
    }
    const double p = eta_[k] + a[k] * lambda_;                                   // eq. 10
    const double marginal = 1.0 - slope[k] * p;
    const double old = rho_[k];
    rho_[k] = plus((1 - params_.gamma_rho1) * old + params_.gamma_rho1 * rho_tilde_[k] +
                   step[k] * marginal);                                   // eq. 16
    rho_tilde_[k] = (1 - params_.gamma_rho_tilde) * rho_tilde_[k] + params_.gamma_rho_tilde * old;  // eq. 11
  }
  // σ_k^i = ϱ_{i,k} + Σ_c σ_k^c; the routes below (nodes that can run k) for eq. 18, and
  // the sum of the relative steps of those computing k (ϱ_{i,k} > 0): a price change Δ on
  // the link above moves σ_k by −Δ·cost·(ϱ_k/w_k)^α times that sum.
  std::vector<double> runnable(kk, 0.0), active(kk, 0.0);
  for (std::size_t k = 0; k < kk; ++k) {
    sigma_[k] = rho_[k];
    runnable[k] = std::isinf(a[k]) ? 0.0 : 1.0;
    active[k] = rho_[k] > 0 ? step[k] : 0.0;
  }
  for (const auto& [id, c] : children_)
    for (std::size_t k = 0; k < kk && k < c.sigma.size(); ++k) {
      sigma_[k] += c.sigma[k];
      runnable[k] += c.runnable[k];
      if (k < c.active_steps.size()) active[k] += c.active_steps[k];
    }
  for (std::size_t k = 0; k < kk; ++k) {
    if (routed() && !state.config.is_root && !from_parent(state, k)) {  // the parent is downstream of k
      sigma_[k] += parent_sigma_[k];
      runnable[k] += parent_runnable_[k];
      active[k] += parent_active_[k];
    }
    if (from_self(state, k)) {
      rho_global_[k] = sigma_[k];  // eq. 13, at k's master
      routes_[k] = runnable[k];
    }
  }

  // Algorithm 4, the executor: eq. 17 (scaled) or eq. 14. With every ϱ_k = 0 eq. 17 is
  // undefined: the price is kept (the rates restart through γ_ϱ^(2)·1).
  double usage = 0, denom = 0;
  bool known = false;
  for (std::size_t k = 0; k < kk; ++k)
    if (a[k] > 0 && std::isfinite(a[k])) {
      known = true;
      usage += a[k] * rho_[k];
      // eq. 17's Σ_k w_k²·ϱ_k; with relative steps Σ_k γ2_k·a²·(ϱ_k/w_k)^α, so that the
      // loop gain γ_λ·Σ_k γ2_k·a²·(ϱ_k/w_k)^α/denom of its derivation is relative_price_gain.
      // Relative steps: only the applications this node computes (ϱ_{i,k} > 0) respond to
      // the price (the others sit at [·]^+ = 0), so only they count in the loop gain.
      if (!rel) denom += a[k] * a[k] * rho_global_[k];
      else if (rho_[k] > 0) denom += step[k] * a[k] * a[k] * slope[k];
    }
  // Relative steps with no application computed here: the executor is idle, its price
  // falls to 0.
  if (known) lambda_ = updated_price(lambda_, usage, denom, gamma_lambda, rel, scaled, params_.relative_price_gain);
  // Algorithm 4, the links to the children (multi-port, eq. 18 or 15) or the port
  // (one-port: one resource shared by all the links of this node).
  double port_usage = 0, port_denom = 0, port_bw = 0;
  for (auto& [id, c] : children_) {
    const auto it = state.children.find(id);
    if (it == state.children.end()) continue;
    const double bw = it->second.bandwidth;
    if (!(bw > 0) || c.sigma.empty()) continue;
    double u = 0, d = 0;
    for (std::size_t k = 0; k < kk; ++k) {
      const double cost = apps[k].bytes / bw;  // link seconds per task
      u += cost * c.sigma[k];
      // Relative steps: the routes that compute k below this link (active), as above.
      if (!rel) d += cost * cost * c.runnable[k] * rho_global_[k];
      else if (k < c.active_steps.size()) d += cost * cost * c.active_steps[k] * slope[k];
    }
    port_usage += u;
    port_denom += d;
    port_bw = std::max(port_bw, bw);
    if (state.config.one_port) continue;
    c.mu = updated_price(c.mu, u, d, gamma_mu, rel, scaled, params_.relative_price_gain);
  }
  // Routed: the link to the parent in the up direction (applications whose master is
  // below), priced here as the child links are (its sender owns it).
  const double up_bw = routing_.parent_bandwidth;
  if (routed() && !state.config.is_root && up_bw > 0 && std::isfinite(up_bw)) {
    double u = 0, d = 0;
    bool flows = false;
    for (std::size_t k = 0; k < kk; ++k) {
      if (from_parent(state, k)) continue;
      flows = true;
      const double cost = apps[k].bytes / up_bw;
      u += cost * parent_sigma_[k];
      if (!rel) d += cost * cost * parent_runnable_[k] * rho_global_[k];
      else d += cost * cost * parent_active_[k] * slope[k];
    }
    if (flows) {
      if (!up_mu_set_) {
        up_mu_ = rel ? 0.0 : params_.mu_init / unit;
        up_mu_set_ = true;
      }
      port_usage += u;
      port_denom += d;
      port_bw = std::max(port_bw, up_bw);
      if (!state.config.one_port) up_mu_ = updated_price(up_mu_, u, d, gamma_mu, rel, scaled, params_.relative_price_gain);
    }
  }
  if (state.config.one_port && port_bw > 0)
    port_price_ = updated_price(port_price_, port_usage, port_denom, gamma_mu, rel, scaled, params_.relative_price_gain);

  // Messages: σ up; η + the link's price, ϱ_k and the parameters down. Routed: both to
  // every neighbour, each reads per application the direction it flows in.
  auto down_values = [&](double bandwidth, double price) {
    DownValues v{std::vector<double>(kk, 0.0), rho_global_, routes_, std::vector<double>(kk, std::numeric_limits<double>::infinity())};
    for (std::size_t k = 0; k < kk; ++k) {
      v[0][k] = eta_[k] + (bandwidth > 0 && std::isfinite(bandwidth) ? apps[k].bytes / bandwidth * price : 0.0);
      if (k < path_cap_.size()) v[3][k] = path_cap_[k];
      if (bandwidth > 0 && apps[k].bytes > 0) v[3][k] = std::min(v[3][k], bandwidth / apps[k].bytes);
    }
    return v;
  };
  const UpValues up{sigma_, runnable, active};
  if (!state.config.is_root) {
    if (routed())
      outbox_.push_back(action::SendPolicyMessage{
          true, ChildId{}, encode(Kind::up, {}, down_values(up_bw, state.config.one_port ? port_price_ : up_mu_), up, true)});
    else
      outbox_.push_back(action::SendPolicyMessage{true, ChildId{}, encode_up(sigma_, runnable, active)});
  }
  for (const auto& [id, c] : state.children) {
    const auto& mine = children_[id];
    const double price = state.config.one_port ? port_price_ : mine.mu;
    outbox_.push_back(action::SendPolicyMessage{false, id, encode(Kind::down, params_, down_values(c.bandwidth, price), up, routed())});
  }
  ++iterations_;
  adopt_plan(state);
}

void PricePolicy::adopt_plan(const NodeState& state) {
  NodePlan plan;
  plan.local = rho_;
  for (const auto& [id, c] : children_)
    if (auto it = state.children.find(id); it != state.children.end() && !c.sigma.empty())
      plan.children[it->second.info.name] = c.sigma;
  if (!follower_.plan() || !same_plan(*follower_.plan(), plan)) follower_.set_plan(std::move(plan));
  if (state.config.is_root && !close(mix_, rho_global_)) {
    mix_ = rho_global_;
    plan_mix_.set_frequencies(mix_);
  }
}

std::optional<Assignment> PricePolicy::unplanned_select(const NodeState& state) {
  return FcfsPolicy{}.select(state);  // no rates yet, or no planned choice feasible
}

// The root iterates while the run has work (tasks to draw, buffered or in flight); the
// others while their parent keeps sending: so a finished run goes quiet (no Tick), and a
// harness or simulation without sockets ends.
bool PricePolicy::wants_update(const NodeState& state) const {
  if (!active_) return false;
  if (!state.config.is_root) return origin_anywhere(state) || fresh_;  // a master below the root: the price study only
  if (!state.buffer.empty() || local_running_ > 0) return true;
  for (std::size_t k = 0; k < state.config.apps.size(); ++k)
    if (state.source_remaining(AppId{static_cast<std::uint32_t>(k)}) > 0) return true;
  for (const auto& [id, c] : state.children)
    if (c.in_flight > 0) return true;
  return false;
}

// `period`, or half the node's slowest task or transfer if longer: rates cannot be followed
// faster than tasks move, and updating more often only costs messages. And at most as
// often as keeps the messages to each child within control_share of its link: they travel
// with the tasks, and the agents price the links for tasks only (bertin2008's program has
// no control traffic) — on examples/bertin2008.toml's 10 kB/s links a 0.1 s period sent
// 1.6 kB/s of prices down each link and the tasks got 84% of it.
Seconds PricePolicy::effective_period(const NodeState& state) const {
  const std::size_t kk = state.config.apps.size();
  const double message_bytes = 125.0 + 32.0 * static_cast<double>(kk) + (routed() ? 1.0 + 24.0 * static_cast<double>(kk) : 0.0);
  Seconds scale = 0, control = 0;
  for (const auto& [id, c] : state.children)
    if (c.bandwidth > 0) control = std::max(control, message_bytes / (control_share * c.bandwidth));
  for (std::size_t k = 0; k < kk; ++k) {
    if (k < state.local_seconds.size() && std::isfinite(state.local_seconds[k])) scale = std::max(scale, state.local_seconds[k]);
    for (const auto& [id, c] : state.children)
      if (c.bandwidth > 0) scale = std::max(scale, state.config.apps[k].bytes / c.bandwidth);
  }
  return std::max({params_.period, scale / 2, control});
}

void PricePolicy::take_messages(const NodeState& state, std::vector<Action>& out) {
  busy_ = wants_update(state);
  period_ = effective_period(state);
  if (busy_ && (!updated_once_ || state.now >= last_update_ + period_ * (1 - 1e-9))) {
    updated_once_ = true;
    last_update_ = state.now;
    fresh_ = false;
    update(state);
    busy_ = wants_update(state);
  }
  for (auto& a : outbox_) out.push_back(std::move(a));
  outbox_.clear();
}

std::optional<Seconds> PricePolicy::next_deadline(const NodeState&) const {
  if (!busy_) return std::nullopt;
  return updated_once_ ? last_update_ + period_ : Seconds{0};
}

}  // namespace treefarm::core
