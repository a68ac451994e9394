#include "runtime/core/policies/DataCentricPlanner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace treefarm::core {

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double slack_epsilon = 1e-9;      // CPU or port share regarded as zero
constexpr double desaturation_factor = 0.9;  // §4.5, bus de-saturation

struct Work {
  const std::vector<ViewNode>& view;
  const std::vector<PlannerApp>& apps;
  bool one_port;
  std::size_t n = 0, k = 0;
  std::vector<std::vector<std::size_t>> kids;      // reachable children, by bandwidth desc
  std::vector<std::vector<std::size_t>> subtree;   // reachable nodes of each subtree
  std::vector<bool> reachable;
  std::vector<std::vector<double>> alpha, sent;

  Work(const std::vector<ViewNode>& v, const std::vector<PlannerApp>& a, bool op)
      : view(v), apps(a), one_port(op), n(v.size()), k(a.size()) {
    bool any_bytes = false;
    for (const auto& app : apps) any_bytes |= app.bytes > 0;
    reachable.assign(n, false);
    kids.resize(n);
    subtree.resize(n);
    if (n > 0) reachable[0] = true;
    for (std::size_t u = 1; u < n; ++u) {
      const auto p = static_cast<std::size_t>(view[u].parent);
      // A link of unknown bandwidth cannot be planned for (unless nothing is sent).
      reachable[u] = reachable[p] && (view[u].bandwidth > 0 || !any_bytes);
      if (reachable[u]) kids[p].push_back(u);
    }
    for (auto& c : kids)
      std::stable_sort(c.begin(), c.end(), [&](std::size_t x, std::size_t y) { return view[x].bandwidth > view[y].bandwidth; });
    for (std::size_t u = n; u-- > 0;) {
      if (!reachable[u]) continue;
      subtree[u].push_back(u);
      for (auto c : kids[u]) subtree[u].insert(subtree[u].end(), subtree[c].begin(), subtree[c].end());
    }
    alpha.assign(n, std::vector<double>(k, 0.0));
    sent.assign(n, std::vector<double>(k, 0.0));
  }

  double rate(std::size_t u, std::size_t a) const { return view[u].rate[a]; }
  double cpu(std::size_t u) const {
    double c = 0;
    for (std::size_t a = 0; a < k; ++a)
      if (rate(u, a) > 0) c += alpha[u][a] / rate(u, a);
    return c;
  }
  double slack(std::size_t u) const { return std::max(0.0, 1.0 - cpu(u)); }
  // Seconds of link per second used by the sends to u.
  double link(std::size_t u) const {
    if (!(view[u].bandwidth > 0)) return 0;
    double l = 0;
    for (std::size_t a = 0; a < k; ++a) l += sent[u][a] * apps[a].bytes / view[u].bandwidth;
    return l;
  }
  double port(std::size_t p) const {
    double o = 0;
    for (auto c : kids[p]) o += link(c);
    return o;
  }
  // The share of the link to u still free: the parent's port (one-port) or the link.
  double free_to(std::size_t u, const std::vector<double>& ports) const {
    return std::max(0.0, 1.0 - (one_port ? ports[static_cast<std::size_t>(view[u].parent)] : link(u)));
  }
  // §4.5 gap filling: min over the path root -> u of the residual rate of application a,
  // propagated from the root down, parent before child.
  std::vector<double> residual(std::size_t a) const {
    std::vector<double> ports(n, 0.0);
    if (one_port)
      for (std::size_t p = 0; p < n; ++p)
        if (reachable[p]) ports[p] = port(p);
    std::vector<double> r(n, 0.0);
    if (n > 0) r[0] = inf;
    for (std::size_t u = 1; u < n; ++u) {
      if (!reachable[u]) continue;
      const double here = apps[a].bytes > 0 ? free_to(u, ports) * view[u].bandwidth / apps[a].bytes : inf;
      r[u] = std::min(r[static_cast<std::size_t>(view[u].parent)], here);
    }
    return r;
  }
  // Adds `delta` tasks/s of a computed at u, and carried along the path to u.
  void add(std::size_t u, std::size_t a, double delta) {
    alpha[u][a] = std::max(0.0, alpha[u][a] + delta);
    for (std::size_t x = u; x != 0; x = static_cast<std::size_t>(view[x].parent))
      sent[x][a] = std::max(0.0, sent[x][a] + delta);
  }

  // The bandwidth-centric solution for application a alone ([6, 3] of the paper): each
  // subtree reduces to an equivalent rate; a node feeds its own executor first, then its
  // children by decreasing bandwidth while its port has time left.
  void bandwidth_centric(std::size_t a) {
    std::vector<double> eq(n, 0.0), grant(n, 0.0);
    const double bytes = apps[a].bytes;
    for (std::size_t u = n; u-- > 0;) {
      if (!reachable[u]) continue;
      double total = rate(u, a);
      double port_left = 1.0;
      for (auto c : kids[u]) {
        const double cost = bytes > 0 ? bytes / view[c].bandwidth : 0;  // link seconds per task
        double g = eq[c];
        if (cost > 0) g = std::min(g, (one_port ? port_left : 1.0) / cost);
        if (one_port) port_left = std::max(0.0, port_left - g * cost);
        grant[c] = g;
        total += g;
      }
      eq[u] = total;
    }
    std::vector<double> flow(n, 0.0);
    if (n > 0) flow[0] = eq[0];
    for (std::size_t u = 0; u < n; ++u) {
      if (!reachable[u]) continue;
      const double local = std::min(flow[u], rate(u, a));
      alpha[u][a] = local;
      double rest = flow[u] - local;
      for (auto c : kids[u]) {
        const double give = std::min(rest, grant[c]);
        flow[c] = sent[c][a] = give;
        rest -= give;
      }
    }
  }
};
}  // namespace

std::vector<std::size_t> DataCentricPlanner::by_ccr(const std::vector<PlannerApp>& apps) {
  std::vector<std::size_t> order(apps.size());
  std::iota(order.begin(), order.end(), 0);
  auto ccr = [&](std::size_t a) { return apps[a].flops > 0 ? apps[a].bytes / apps[a].flops : apps[a].bytes; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return ccr(x) > ccr(y); });
  return order;
}

PlannerResult DataCentricPlanner::plan(const std::vector<ViewNode>& view, const std::vector<PlannerApp>& apps, bool one_port) {
  if (apps.empty()) throw std::invalid_argument("DataCentricPlanner: at least one application is required");
  for (const auto& a : apps)
    if (!(a.weight > 0) || !(a.bytes >= 0)) throw std::invalid_argument("DataCentricPlanner: weights must be > 0 and sizes >= 0");
  for (std::size_t u = 0; u < view.size(); ++u) {
    if (view[u].rate.size() != apps.size())
      throw std::invalid_argument("DataCentricPlanner: node '" + view[u].name + "' has " + std::to_string(view[u].rate.size()) +
                                  " rates, expected one per application (" + std::to_string(apps.size()) + ")");
    if (u == 0 ? view[u].parent != -1 : (view[u].parent < 0 || static_cast<std::size_t>(view[u].parent) >= u))
      throw std::invalid_argument("DataCentricPlanner: node '" + view[u].name + "' must come after its parent (root first)");
    for (double r : view[u].rate)
      if (!(r >= 0) || !std::isfinite(r)) throw std::invalid_argument("DataCentricPlanner: rates must be finite and >= 0");
  }
  Work w(view, apps, one_port);
  PlannerResult res;
  const std::size_t k = apps.size();
  auto totals = [&] {
    std::vector<double> t(k, 0.0);
    for (std::size_t u = 0; u < w.n; ++u)
      for (std::size_t a = 0; a < k; ++a) t[a] += w.alpha[u][a];
    return t;
  };
  if (!view.empty()) w.bandwidth_centric(by_ccr(apps).front());

  for (; res.iterations < max_iterations; ++res.iterations) {
    const auto t = totals();
    std::size_t A = 0, B = 0;
    for (std::size_t a = 1; a < k; ++a) {
      if (t[a] / apps[a].weight > t[A] / apps[A].weight) A = a;
      if (t[a] / apps[a].weight < t[B] / apps[B].weight) B = a;
    }
    const double hi = t[A] / apps[A].weight, lo = t[B] / apps[B].weight;
    if (hi <= 0) break;                                   // nothing can be computed at all
    if (lo > 0 && (hi - lo) / lo < tolerance) break;      // §4.5 stopping criterion
    const double gap = hi - lo;                           // in weighted tasks/s
    const double tiny = 1e-9 * *std::max_element(t.begin(), t.end());
    const double wa = apps[A].weight, wb = apps[B].weight;

    // 1. Communication trading: an under-used node computing A takes B instead, as many
    // bytes for as many bytes, so every link of its path carries the same load.
    if (apps[A].bytes > 0 && apps[B].bytes > 0) {
      const double ratio = apps[A].bytes / apps[B].bytes;  // B tasks per A task traded
      std::size_t best = 0;
      double best_x = 0;
      for (std::size_t u = 1; u < w.n; ++u) {
        if (!w.reachable[u] || w.alpha[u][A] <= tiny || w.rate(u, B) <= 0) continue;
        const double slack = w.slack(u);
        if (slack <= slack_epsilon) continue;
        const double dcpu = ratio / w.rate(u, B) - (w.rate(u, A) > 0 ? 1.0 / w.rate(u, A) : 0.0);
        double x = std::min(w.alpha[u][A], gap / (1.0 / wa + ratio / wb));
        if (dcpu > 0) x = std::min(x, slack / dcpu);
        if (x * ratio > best_x * ratio) {
          best = u;
          best_x = x;
        }
      }
      if (best_x * ratio > tiny) {
        w.add(best, A, -best_x);
        w.add(best, B, best_x * ratio);
        ++res.trades;
        continue;
      }
    }
    // 2. Gap filling: the node that can take the most B tasks, bounded by its free CPU,
    // the residual bandwidth of its path and the fairness gap.
    {
      const auto r = w.residual(B);
      std::size_t best = 0;
      double best_e = 0;
      for (std::size_t u = 0; u < w.n; ++u) {
        if (!w.reachable[u] || w.rate(u, B) <= 0) continue;
        const double e = std::min({w.rate(u, B) * w.slack(u), r[u], wb * gap});
        if (e > best_e) {
          best = u;
          best_e = e;
        }
      }
      if (best_e > tiny) {
        w.add(best, B, best_e);
        ++res.gap_fills;
        continue;
      }
    }
    // 3. Bus de-saturation: the root's port is full while some node with free CPU could
    // compute B: scale A down by 0.9 in the branch of smallest bandwidth that computes A.
    {
      const auto r = w.residual(B);
      bool starved = false;
      for (std::size_t u = 1; u < w.n && !starved; ++u)
        starved = w.reachable[u] && w.rate(u, B) > 0 && w.slack(u) > slack_epsilon && r[u] <= tiny;
      bool saturated = false;
      if (w.one_port) {
        saturated = w.port(0) >= 1.0 - 1e-6;
      } else {
        for (auto c : w.kids[0]) saturated |= w.sent[c][A] > 0 && w.link(c) >= 1.0 - 1e-6;
      }
      std::optional<std::size_t> branch;
      for (auto c : w.kids[0])
        if (w.sent[c][A] > tiny && (!branch || w.view[c].bandwidth < w.view[*branch].bandwidth)) branch = c;
      if (starved && saturated && branch) {
        for (auto x : w.subtree[*branch]) {
          w.alpha[x][A] *= desaturation_factor;
          w.sent[x][A] *= desaturation_factor;
        }
        ++res.desaturations;
        continue;
      }
    }
    // 4. Task trading on the root: εA tasks of A for εB of B, the same CPU time.
    if (w.n > 0 && w.alpha[0][A] > tiny && w.rate(0, A) > 0 && w.rate(0, B) > 0) {
      const double rho = w.rate(0, B) / w.rate(0, A);
      const double ea = std::min(w.alpha[0][A], gap / (1.0 / wa + rho / wb));
      if (ea * rho > tiny) {
        w.add(0, A, -ea);
        w.add(0, B, ea * rho);
        ++res.root_trades;
        continue;
      }
    }
    break;  // no operation applies
  }
  res.totals = totals();
  res.alpha = std::move(w.alpha);
  res.sent = std::move(w.sent);
  double hi = 0, lo = inf;
  for (std::size_t a = 0; a < k; ++a) {
    hi = std::max(hi, res.totals[a] / apps[a].weight);
    lo = std::min(lo, res.totals[a] / apps[a].weight);
  }
  res.imbalance = lo > 0 ? (hi - lo) / lo : inf;
  res.balanced = res.imbalance < tolerance;
  return res;
}

}  // namespace treefarm::core
