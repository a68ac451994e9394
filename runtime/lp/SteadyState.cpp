#include "runtime/lp/SteadyState.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace treefarm::lp {
namespace {


double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The LP of beaumont2006 §3.1 (3), with the objective in max-min form: maximize T under
/// α(k) >= w(k)·T. Variables that are 0 in every solution are not created: α_u^(k) when
/// u cannot run k, sent_u^(k) when no node of u's subtree can run k.

std::vector<std::vector<std::size_t>> children_of(const PlatformModel& m) {
  std::vector<std::vector<std::size_t>> children(m.nodes.size());
  for (std::size_t u = 1; u < m.nodes.size(); ++u) children[static_cast<std::size_t>(m.nodes[u].parent)].push_back(u);
  return children;
}

/// Calls f(v, k, bytes, tasks) for every application k on every link node u is an end of
/// (the link above each child v of u, and the link above u itself, v = u): `bytes` per
/// unit of sent_v^(k) that u sends over it (send = true) or receives (send = false).
/// Tasks go from k's upstream end of the link to the other (down, or up for an origin
/// below it, bertin2008 §2.2); their outputs, result_bytes(k), come back the other way
/// (beaumont2006 §2 takes them as negligible and notes the model holds as well
/// for outputs). `tasks` says which of the two the bytes are.
/// The same over the link above node v alone, seen from its parent's end (parent_end) or
/// from v's.
template <class F>
void for_each_transfer_on(const PlatformModel& m, std::size_t v, bool parent_end, bool send, F&& f) {
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    const bool sends_tasks = parent_end != m.flows_up(v, k);
    const bool tasks = sends_tasks == send;
    f(v, k, tasks ? m.apps[k].bytes : m.apps[k].result_bytes, tasks);
  }
}

template <class F>
void for_each_transfer(const PlatformModel& m, const std::vector<std::vector<std::size_t>>& children, std::size_t u,
                       bool send, F&& f) {
  for (std::size_t v : children[u]) for_each_transfer_on(m, v, true, send, f);
  if (u > 0) for_each_transfer_on(m, u, false, send, f);
}

/// Seconds of link v one unit of a transfer of `bytes` holds (0 on loopback).
double link_seconds(const PlatformModel& m, std::size_t v, double bytes) {
  const double bw = m.nodes[v].link_bandwidth;
  return bytes == 0.0 || std::isinf(bw) ? 0.0 : bytes / bw;
}
}  // namespace

LpProblem build_steady_state_lp(const PlatformModel& m, SteadyStateVariables& var) {
  constexpr std::size_t none = SteadyStateVariables::none;
  const std::size_t n = m.nodes.size();
  const std::size_t kk = m.apps.size();
  const auto children = children_of(m);

  // useful[u][k]: some node of u's subtree can run k (children come after parents, so
  // one backward pass suffices).
  std::vector<std::vector<char>> useful(n, std::vector<char>(kk, 0));
  for (std::size_t u = n; u-- > 0;) {
    for (std::size_t k = 0; k < kk; ++k) {
      if (m.can_run(u, k)) useful[u][k] = 1;
      if (u > 0 && useful[u][k]) useful[m.nodes[u].parent][k] = 1;
    }
  }
  // Applications from several masters (bertin2008 §2.2): k crosses the link above u
  // upwards when its origin is in u's subtree; that link is useful when a node outside
  // the subtree can run k. sent[u][k] is then the flow u → parent. flows_up[u][k].
  std::vector<std::vector<char>> up(n, std::vector<char>(kk, 0));
  for (std::size_t k = 0; k < kk; ++k) {
    if (m.apps[k].origin == 0) continue;
    std::vector<std::size_t> runnable(n, 0);  // nodes of u's subtree that can run k
    for (std::size_t u = n; u-- > 0;) {
      runnable[u] += m.can_run(u, k) ? 1 : 0;
      if (u > 0) runnable[m.nodes[u].parent] += runnable[u];
    }
    for (std::size_t u = 1; u < n; ++u)
      if (m.flows_up(u, k)) {
        up[u][k] = 1;
        useful[u][k] = runnable[0] > runnable[u] ? 1 : 0;
      }
  }

  LpProblem lp;
  lp.reserve(1 + 2 * n * kk, n * (kk + 2) + kk, 8 * n * kk);
  lp.set_sense(Sense::maximize);
  var.fair = lp.add_variable(0.0, lp_infinity, 1.0);
  var.alpha.assign(n, std::vector<std::size_t>(kk, none));
  var.sent.assign(n, std::vector<std::size_t>(kk, none));
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t k = 0; k < kk; ++k) {
      if (m.can_run(u, k)) var.alpha[u][k] = lp.add_variable(0.0, lp_infinity);
      if (u > 0 && useful[u][k]) var.sent[u][k] = lp.add_variable(0.0, lp_infinity);
    }
  }

  std::vector<LpTerm> row;
  // Data movement conservation, ∀k ∀u ≠ 0 (LP (3) second line):
  //   sent_{p(u)→u}^(k) - α_u^(k) - Σ_{v∈Γ(u)} sent_{u→v}^(k) = 0.
  // With an origin other than the root (bertin2008 §2.2) the same row holds on k's own
  // spanning tree: in from the upstream neighbour, out to every other neighbour.
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t k = 0; k < kk; ++k) {
      if (u == m.apps[k].origin) continue;
      const int from = m.upstream(u, k);
      const std::size_t in = from == m.nodes[u].parent ? var.sent[u][k] : var.sent[static_cast<std::size_t>(from)][k];
      if (in == none) continue;
      row.clear();
      row.push_back({in, 1.0});
      if (var.alpha[u][k] != none) row.push_back({var.alpha[u][k], -1.0});
      for (std::size_t v : children[u]) {
        if (var.sent[v][k] != none && static_cast<int>(v) != from) row.push_back({var.sent[v][k], -1.0});
      }
      if (u > 0 && up[u][k] && var.sent[u][k] != none) row.push_back({var.sent[u][k], -1.0});
      lp.add_row(row, 0.0, 0.0);
    }
  }
  // Computation limit at u (LP (3) third line, with cores): a task of k holds
  // cores_per_task(k) cores for task_seconds_u^(k) seconds, so
  //   Σ_k α_u^(k) · task_seconds_u^(k) · cores_per_task(k) <= cores_u,
  // written divided by cores_u (rows of order 1 condition the simplex better).
  // With hosts known, task_seconds were measured on a share of the node's CPUs: alone
  // it needs task_seconds·cpu_share (docs/lp.md, "Hosts").
  for (std::size_t u = 0; u < n; ++u) {
    row.clear();
    for (std::size_t k = 0; k < kk; ++k) {
      if (var.alpha[u][k] == none) continue;
      row.push_back({var.alpha[u][k], m.nodes[u].task_seconds[k] * m.nodes[u].cpu_share * m.apps[k].cores_per_task /
                                          m.nodes[u].cores});
    }
    if (!row.empty()) lp.add_row(row, -lp_infinity, 1.0);
    // Integer packing (docs/lp.md, "Computation"): the executor runs whole tasks, so at
    // most floor(cores_u / cores_per_task(k)) tasks of k at once,
    //   α_u^(k) · task_seconds_u^(k) <= floor(cores_u / cores_per_task(k)).
    // Needed only where cores_per_task(k) does not divide cores_u (otherwise the row
    // above implies it). With several applications this is a relaxation of the integer
    // packing (the convex hull of the feasible task mixes can be smaller), exact for one.
    for (std::size_t k = 0; k < kk; ++k) {
      if (var.alpha[u][k] == none) continue;
      const std::uint32_t cpt = std::max<std::uint32_t>(m.apps[k].cores_per_task, 1);
      const std::uint32_t slots = m.nodes[u].cores / cpt;
      if (slots == 0 || slots * cpt == m.nodes[u].cores) continue;
      row.clear();
      row.push_back({var.alpha[u][k], m.nodes[u].task_seconds[k] * m.nodes[u].cpu_share / static_cast<double>(slots)});
      lp.add_row(row, -lp_infinity, 1.0);
    }
  }
  // Hosts (docs/lp.md "Hosts"): nodes on one machine share its CPUs. Per host h,
  //   Σ_{u on h} Σ_k α_u^(k)·t_u^(k)·share_u·cpt(k)
  //     + γ_h · Σ_{transfers v touching h} Σ_k sent_v^(k)·b(k)·(1 or ½) <= cores_h,
  //     + Σ_u Σ_k α_u^(k)·b(k)·(ρ_h·[u on h] + ι_h·[origin(k) on h])   <= cores_h,
  // γ_h the CPU seconds a byte costs to move between two processes of h (a transfer
  // inside h costs γ_h there, one to or from another host γ_h/2 on each side), ι_h what
  // the origin spends per byte generating a task's input, ρ_h what the computing node
  // spends per byte receiving and releasing it (both measured through the runtime,
  // tools/HostCalibration). And per set of CPUs that several nodes of h are pinned to:
  // Σ_{u pinned there} ... <= |set|.
  for (std::size_t h = 0; h < m.hosts.size(); ++h) {
    const double cap = m.hosts[h].cores;
    const double gamma = m.hosts[h].comm_cpu_seconds_per_byte;
    row.clear();
    for (std::size_t u = 0; u < n; ++u) {
      const bool here = m.nodes[u].host == static_cast<int>(h);
      for (std::size_t k = 0; k < kk; ++k) {
        if (var.alpha[u][k] == none) continue;
        const double cpu = host_cpu_per_task(m, h, u, k);
        if (cpu > 0.0) row.push_back({var.alpha[u][k], cpu / cap});
      }
      if (u == 0 || gamma <= 0.0) continue;
      const bool parent_here = m.nodes[static_cast<std::size_t>(m.nodes[u].parent)].host == static_cast<int>(h);
      const double sides = (here ? 0.5 : 0.0) + (parent_here ? 0.5 : 0.0);
      if (sides == 0.0) continue;
      for (std::size_t k = 0; k < kk; ++k)  // the tasks and, the other way, their outputs
        if (const double bytes = hop_bytes(m, m.hosts[h], u, static_cast<std::size_t>(m.nodes[u].parent), k);
            var.sent[u][k] != none && bytes > 0.0)
          row.push_back({var.sent[u][k], gamma * sides * bytes / cap});
    }
    if (!row.empty()) lp.add_row(row, -lp_infinity, 1.0);
    // CPU sets shared by two or more nodes of this host.
    std::vector<char> done(n, 0);
    for (std::size_t u = 0; u < n; ++u) {
      if (done[u] || m.nodes[u].host != static_cast<int>(h) || m.nodes[u].cpus.empty()) continue;
      std::vector<std::size_t> group;
      for (std::size_t v = u; v < n; ++v)
        if (m.nodes[v].host == static_cast<int>(h) && m.nodes[v].cpus == m.nodes[u].cpus) group.push_back(v);
      for (std::size_t v : group) done[v] = 1;
      if (group.size() < 2) continue;
      const double set = static_cast<double>(m.nodes[u].cpus.size());
      row.clear();
      for (std::size_t v : group)
        for (std::size_t k = 0; k < kk; ++k)
          if (var.alpha[v][k] != none)
            row.push_back({var.alpha[v][k],
                           m.nodes[v].task_seconds[k] * m.nodes[v].cpu_share * m.apps[k].cores_per_task / set});
      if (!row.empty()) lp.add_row(row, -lp_infinity, 1.0);
    }
  }
  // Communication limits.
  for (std::size_t u = 0; u < n; ++u) {
    if (m.comm_model == model::CommModel::one_port) {
      // One-port (LP (3) fourth line): u sends to one neighbour at a time,
      //   Σ_{v∈Γ(u)} Σ_k sent_{u→v}^(k) · (b(k) / b_v + hold_v) <= 1,
      // hold_v the seconds the port stays busy per task beyond the bytes (latency in the
      // simulator, the acknowledgement's round trip for real; docs/lp.md
      // "Latency"; 0 in the paper's model). The same port sends the outputs of the tasks
      // u received back towards their origin (result_bytes), with no hold.
      row.clear();
      for_each_transfer(m, children, u, true, [&](std::size_t v, std::size_t k, double bytes, bool tasks) {
        if (var.sent[v][k] == none) return;
        const double busy = link_seconds(m, v, bytes) + (tasks ? m.port_hold_per_task(v, k) : 0.0);
        if (busy > 0.0) row.push_back({var.sent[v][k], busy});
      });
      if (!row.empty()) lp.add_row(row, -lp_infinity, 1.0);
      // And receives from one neighbour at a time (beaumont2006 §2, "full overlap,
      // single-port": one send and one receive at once). Only outputs make this row bind:
      // without them u receives only its own tasks, from one neighbour.
      row.clear();
      bool outputs = false;
      for_each_transfer(m, children, u, false, [&](std::size_t v, std::size_t k, double bytes, bool tasks) {
        const double busy = link_seconds(m, v, bytes);
        if (var.sent[v][k] == none || !(busy > 0.0)) return;
        outputs = outputs || !tasks;
        row.push_back({var.sent[v][k], busy});
      });
      if (outputs) lp.add_row(row, -lp_infinity, 1.0);
    } else {
      // Bounded multi-port (bertin2008 §2.1): every link on its own (rows below), and all
      // of u's sends together, Σ_v Σ_k sent_{u→v}^(k) · b(k) <= max_out_u (outputs
      // included).
      const double cap = m.nodes[u].max_out_bandwidth;
      if (std::isinf(cap)) continue;
      row.clear();
      for_each_transfer(m, children, u, true, [&](std::size_t v, std::size_t k, double bytes, bool) {
        if (var.sent[v][k] != none && bytes > 0.0) row.push_back({var.sent[v][k], bytes / cap});
      });
      if (!row.empty()) lp.add_row(row, -lp_infinity, 1.0);
    }
  }
  if (m.comm_model == model::CommModel::multi_port) {
    for (std::size_t v = 1; v < n; ++v) {
      if (std::isinf(m.nodes[v].link_bandwidth)) continue;
      // A link has a capacity per direction ((P_i → P_j) of bertin2008 (3)): what v's
      // parent sends down it, then what v sends up (tasks of the applications whose
      // origin is below v; outputs of the others).
      for (const bool down : {true, false}) {
        row.clear();
        for_each_transfer_on(m, v, false, !down, [&](std::size_t, std::size_t k, double bytes, bool) {
          if (var.sent[v][k] != none && bytes > 0.0) row.push_back({var.sent[v][k], link_seconds(m, v, bytes)});
        });
        if (!row.empty()) lp.add_row(row, -lp_infinity, 1.0);
      }
    }
  }
  // A transfer the buffer cannot overlap (docs/lp.md "The buffer against the round trip"):
  // the node's slots are busy for the task and, before it, for its transfer,
  //   Σ_k α_v^(k) · (t_v^(k) + [serial_v,k] · (rtt_v + b(k) / b_v)) <= cores_v.
  if (m.buffer > 0) {
    for (std::size_t v = 1; v < n; ++v) {
      const auto& node = m.nodes[v];
      if (node.serial_transfer.empty() || node.cores == 0) continue;
      row.clear();
      bool serial = false;
      for (std::size_t k = 0; k < kk; ++k) {
        if (var.alpha[v][k] == none) continue;
        double busy = node.task_seconds[k] * std::max<std::uint32_t>(m.apps[k].cores_per_task, 1);
        if (k < node.serial_transfer.size() && node.serial_transfer[k]) {
          busy += node.request_round_trip + link_seconds(m, v, m.apps[k].bytes);
          serial = true;
        }
        row.push_back({var.alpha[v][k], busy / static_cast<double>(node.cores)});
      }
      if (!serial) continue;
      lp.add_row(row, -lp_infinity, 1.0);
      // And while such a task runs the node's full buffer asks for nothing, so its link
      // idles: the link's work for everything v receives comes on top of those tasks,
      //   Σ_k [serial_v,k] · α_v^(k) · (t_v^(k) / cores_v + rtt_v) + Σ_k sent_v^(k) · b(k) / b_v <= 1.
      if (std::isinf(node.link_bandwidth)) continue;
      row.clear();
      for (std::size_t k = 0; k < kk; ++k) {
        const bool serial_k = k < node.serial_transfer.size() && node.serial_transfer[k] && var.alpha[v][k] != none;
        if (serial_k)
          row.push_back({var.alpha[v][k], node.task_seconds[k] * std::max<std::uint32_t>(m.apps[k].cores_per_task, 1) /
                                              static_cast<double>(node.cores) + node.request_round_trip});
        if (var.sent[v][k] != none && !up[v][k] && m.apps[k].bytes > 0.0)
          row.push_back({var.sent[v][k], link_seconds(m, v, m.apps[k].bytes)});
      }
      lp.add_row(row, -lp_infinity, 1.0);
    }
  }
  // Latency with a finite buffer (docs/lp.md "Latency"): node v holds or has
  // requested at most B tasks, and a requested task is in flight for its request's round
  // trip plus its own transfer, so by Little's law
  //   Σ_k sent_v^(k) · (rtt_v + b(k) / b_v) <= B.
  if (m.buffer > 0) {
    for (std::size_t v = 1; v < n; ++v) {
      const double rtt = m.nodes[v].request_round_trip;
      if (!(rtt > 0.0)) continue;
      const double bw = m.nodes[v].link_bandwidth;
      row.clear();
      for (std::size_t k = 0; k < kk; ++k) {
        if (var.sent[v][k] == none || up[v][k]) continue;  // v's requests only (tasks coming down)
        const double transfer = m.apps[k].bytes == 0.0 || std::isinf(bw) ? 0.0 : m.apps[k].bytes / bw;
        row.push_back({var.sent[v][k], (rtt + transfer) / static_cast<double>(m.buffer)});
      }
      if (!row.empty()) lp.add_row(row, -lp_infinity, 1.0);
    }
  }
  // Objective, max-min form: α(k) - w(k)·T >= 0 for every k. By conservation at the
  // root's children, α(k) = α_0^(k) + Σ_{v∈Γ(0)} sent_{0→v}^(k): a short row instead of
  // one with every α_u^(k).
  for (std::size_t k = 0; k < kk; ++k) {
    row = app_rate_terms(m, var, k);
    row.push_back({var.fair, -m.apps[k].weight});
    lp.add_row(row, 0.0, lp_infinity);
  }
  return lp;
}

// α(k) = α_o^(k) + what the origin o sends to each neighbour (its children, and its
// parent when o is not the root; bertin2008 §2.2).
std::vector<LpTerm> app_rate_terms(const PlatformModel& m, const SteadyStateVariables& var, std::size_t k) {
  constexpr std::size_t none = SteadyStateVariables::none;
  const std::size_t o = m.apps[k].origin;
  std::vector<LpTerm> row;
  if (var.alpha[o][k] != none) row.push_back({var.alpha[o][k], 1.0});
  for (std::size_t v = 1; v < m.nodes.size(); ++v)
    if (static_cast<std::size_t>(m.nodes[v].parent) == o && var.sent[v][k] != none) row.push_back({var.sent[v][k], 1.0});
  if (o > 0 && var.sent[o][k] != none) row.push_back({var.sent[o][k], 1.0});
  return row;
}

namespace {
constexpr std::size_t none = SteadyStateVariables::none;
}  // namespace

std::string_view to_string(Resource resource) {
  switch (resource) {
    case Resource::cpu: return "cpu";
    case Resource::link: return "link";
    case Resource::port: return "port";
    case Resource::out_bandwidth: return "out_bandwidth";
    case Resource::buffer: return "buffer";
  }
  return "?";
}

Solution solve(const PlatformModel& model, const SolveOptions& options) {
  const auto solver = make_default_solver();
  return solve(model, *solver, options);
}

namespace {
Solution solve_once(const PlatformModel& m, LpSolver& solver, const SolveOptions& options);

/// Whether node v's buffer of B tasks cannot overlap the transfer of application k under
/// the rates of `s`: the link brings v N = Σ_j sent_v^(j) / α_v^(k) tasks from one task
/// of k it computes to the next (the 1D mechanism spreads them evenly, beaumont2006
/// §4.1), and while a task runs its slot stays taken, so with N > B the next task of k
/// is requested only after the current one started, behind B - 1 others: when k is the
/// node's long task, the core has run out of work before it arrives.
bool transfer_is_serial(const PlatformModel& m, const Solution& s, std::size_t v, std::size_t k) {
  if (!(s.alpha[v][k] > 0.0)) return false;
  double through = 0.0, other_work = 0.0, others = 0.0;
  for (std::size_t j = 0; j < m.apps.size(); ++j) {
    through += s.sent[v][j];
    if (j == k) continue;
    other_work += s.alpha[v][j] * m.nodes[v].task_seconds[j];
    others += s.alpha[v][j];
  }
  const double n = through / s.alpha[v][k];
  if (n <= static_cast<double>(m.buffer) + 1e-9) return false;
  // The B - 1 tasks queued ahead of it cover its round trip and transfer: overlapped.
  const double mean_other = others > 0.0 ? other_work / others : 0.0;
  const double transfer = m.nodes[v].request_round_trip + link_seconds(m, v, m.apps[k].bytes);
  return static_cast<double>(m.buffer - 1) * mean_other < transfer;
}
}  // namespace

// The row above depends on the rates it bounds (which tasks a buffer can overlap depends
// on the plan's mix at each node): solve, mark the transfers the solution's mix leaves
// unoverlapped, solve again, until no new one is marked. A mark stays (the sequence only
// adds rows, so it ends, in at most nodes × applications solves).
Solution solve(const PlatformModel& m, LpSolver& solver, const SolveOptions& options) {
  validate(m);
  if (m.buffer == 0) return solve_once(m, solver, options);
  PlatformModel marked = m;
  for (;;) {
    Solution s = solve_once(marked, solver, options);
    bool more = false;
    for (std::size_t v = 1; v < m.nodes.size(); ++v) {
      auto& serial = marked.nodes[v].serial_transfer;
      if (m.nodes[v].cores == 0) continue;
      serial.resize(m.apps.size(), 0);
      for (std::size_t k = 0; k < m.apps.size(); ++k)
        if (!serial[k] && transfer_is_serial(marked, s, v, k)) serial[k] = 1, more = true;
    }
    if (!more) return s;
  }
}

namespace {
Solution solve_once(const PlatformModel& m, LpSolver& solver, const SolveOptions& options) {
  switch (options.objective) {
    case Objective::max_min: break;  // the only objective so far; see SolveOptions
  }
  const auto t0 = std::chrono::steady_clock::now();
  SteadyStateVariables var;
  const LpProblem lp = build_steady_state_lp(m, var);
  Solution s;
  s.objective = options.objective;
  s.build_seconds = seconds_since(t0);
  s.lp_variables = lp.variable_count();
  s.lp_rows = lp.row_count();

  const auto t1 = std::chrono::steady_clock::now();
  LpResult r = solver.solve(lp);
  if (r.status != LpStatus::optimal) {
    throw std::runtime_error("steady-state LP: solver returned '" + std::string(to_string(r.status)) +
                             "' (" + std::to_string(lp.variable_count()) + " variables, " +
                             std::to_string(lp.row_count()) + " rows)");
  }
  // With hosts, nodes of one host are interchangeable for the host row, and the simplex
  // returns a vertex that may give one node everything and its twin nothing, or one
  // node all of an application and the other none of it (on the quickstart,
  // w1 all mm and w2 all ma, which the lp policy then served outside its plan). Among the
  // optima, the plan spreading each application over the nodes is the one a policy can
  // follow: a second stage minimises U, the largest share of any application's rate one
  // node computes (α_u^(k) <= U·w(k)·T*), subject to T >= T*(1 - 1e-9), then scales the
  // rates to T*. Without hosts the first vertex is kept.
  if (!m.hosts.empty() && r.values[var.fair] > 0.0) {
    SteadyStateVariables v2;
    LpProblem spread = build_steady_state_lp(m, v2);
    spread.set_objective(v2.fair, 0.0);
    spread.set_sense(Sense::minimize);
    const std::size_t largest = spread.add_variable(0.0, lp_infinity, 1.0);
    std::vector<LpTerm> row{{v2.fair, 1.0}};
    spread.add_row(row, r.values[var.fair] * (1.0 - 1e-9), lp_infinity);
    for (std::size_t u = 0; u < m.nodes.size(); ++u)
      for (std::size_t k = 0; k < m.apps.size(); ++k) {
        if (v2.alpha[u][k] == none) continue;
        row = {{v2.alpha[u][k], 1.0}, {largest, -m.apps[k].weight * r.values[var.fair]}};
        spread.add_row(row, -lp_infinity, 0.0);
      }
    if (LpResult r2 = solver.solve(spread); r2.status == LpStatus::optimal && r2.values[v2.fair] > 0.0) {
      // The same columns, U dropped; rates scaled to T* (the solver's tolerance lets T
      // sit ~1e-7 below it; the rows then hold to that tolerance, as the first stage's do).
      const double scale = r.values[var.fair] / r2.values[v2.fair];
      r2.values.resize(lp.variable_count());
      for (double& x : r2.values) x *= scale;
      r = std::move(r2);
    }
  }
  s.solve_seconds = seconds_since(t1);

  const std::size_t n = m.nodes.size();
  const std::size_t kk = m.apps.size();
  // Simplex values can be -1e-12 instead of 0: clamp, as a negative rate means nothing.
  auto value = [&](std::size_t column) {
    return column == none ? 0.0 : std::max(0.0, r.values[column]);
  };
  s.fair_throughput = value(var.fair);
  s.alpha.assign(n, std::vector<double>(kk, 0.0));
  s.sent.assign(n, std::vector<double>(kk, 0.0));
  s.app_throughput.assign(kk, 0.0);
  for (std::size_t u = 0; u < n; ++u) {
    for (std::size_t k = 0; k < kk; ++k) {
      s.alpha[u][k] = value(var.alpha[u][k]);
      s.sent[u][k] = value(var.sent[u][k]);
      s.app_throughput[k] += s.alpha[u][k];
    }
  }

  s.cpu_utilisation.assign(n, 0.0);
  s.link_utilisation.assign(n, 0.0);
  s.port_utilisation.assign(n, 0.0);
  const auto children = children_of(m);
  for (std::size_t u = 0; u < n; ++u) {
    const auto& node = m.nodes[u];
    double busy = 0.0;
    for (std::size_t k = 0; k < kk; ++k)
      if (s.alpha[u][k] > 0.0) busy += s.alpha[u][k] * node.task_seconds[k] * node.cpu_share * m.apps[k].cores_per_task;
    if (node.cores > 0) s.cpu_utilisation[u] = busy / node.cores;
    // Integer packing: a node whose task slots are all busy is saturated even with
    // cores left over (3 cores, tasks of 2: one slot, 2/3 of the cores).
    for (std::size_t k = 0; k < kk; ++k) {
      const std::uint32_t cpt = std::max<std::uint32_t>(m.apps[k].cores_per_task, 1);
      const std::uint32_t slots = node.cores / cpt;
      if (slots == 0 || !(s.alpha[u][k] > 0.0)) continue;
      s.cpu_utilisation[u] = std::max(s.cpu_utilisation[u], s.alpha[u][k] * node.task_seconds[k] * node.cpu_share / slots);
    }
    // The link from the parent: its busier direction (the rows of each model bound each
    // direction; outputs travel against their tasks).
    if (u > 0 && !std::isinf(node.link_bandwidth)) {
      double in = 0.0, out = 0.0;
      for_each_transfer_on(m, u, false, false, [&](std::size_t, std::size_t k, double bytes, bool) { in += s.sent[u][k] * bytes; });
      for_each_transfer_on(m, u, false, true, [&](std::size_t, std::size_t k, double bytes, bool) { out += s.sent[u][k] * bytes; });
      s.link_utilisation[u] = std::max(in, out) / node.link_bandwidth;
    }
    // The port: one-port, the busier of the send and the receive port (the rows above);
    // multi-port, the bytes/s u sends over its max_out_bandwidth.
    double sending = 0.0, receiving = 0.0, sent_bytes = 0.0;
    bool outputs = false;
    for_each_transfer(m, children, u, true, [&](std::size_t v, std::size_t k, double bytes, bool tasks) {
      sending += s.sent[v][k] * (link_seconds(m, v, bytes) + (tasks ? m.port_hold_per_task(v, k) : 0.0));
      sent_bytes += s.sent[v][k] * bytes;
    });
    for_each_transfer(m, children, u, false, [&](std::size_t v, std::size_t k, double bytes, bool tasks) {
      const double seconds = link_seconds(m, v, bytes);
      receiving += s.sent[v][k] * seconds;
      outputs = outputs || (!tasks && seconds > 0.0);
    });
    if (m.comm_model == model::CommModel::one_port)
      s.port_utilisation[u] = std::max(sending, outputs ? receiving : 0.0);
    else if (!std::isinf(node.max_out_bandwidth))
      s.port_utilisation[u] = sent_bytes / node.max_out_bandwidth;
  }
  s.host_utilisation.assign(m.hosts.size(), 0.0);
  for (std::size_t u = 0; u < n; ++u) {
    const auto& node = m.nodes[u];
    for (std::size_t k = 0; k < kk; ++k) {
      if (s.alpha[u][k] > 0.0)  // 0·inf is NaN: a node that cannot run k has t = inf
        for (std::size_t h = 0; h < m.hosts.size(); ++h)
          s.host_utilisation[h] += s.alpha[u][k] * host_cpu_per_task(m, h, u, k);
      if (u == 0) continue;
      const int here = node.host, parent = m.nodes[static_cast<std::size_t>(node.parent)].host;
      for (const int h : {here, parent}) {
        if (h < 0) continue;
        const auto& host = m.hosts[static_cast<std::size_t>(h)];
        s.host_utilisation[static_cast<std::size_t>(h)] +=
            0.5 * s.sent[u][k] * hop_bytes(m, host, u, static_cast<std::size_t>(node.parent), k) * host.comm_cpu_seconds_per_byte;
      }
    }
  }
  for (std::size_t h = 0; h < m.hosts.size(); ++h) s.host_utilisation[h] /= m.hosts[h].cores;
  s.buffer_utilisation.assign(n, 0.0);
  for (std::size_t u = 1; u < n && m.buffer > 0; ++u) {
    const auto& node = m.nodes[u];
    if (!(node.request_round_trip > 0.0)) continue;
    double in_flight = 0.0;
    for (std::size_t k = 0; k < kk; ++k) {
      const double transfer = m.apps[k].bytes == 0.0 || std::isinf(node.link_bandwidth) ? 0.0 : m.apps[k].bytes / node.link_bandwidth;
      in_flight += s.sent[u][k] * (node.request_round_trip + transfer);
    }
    s.buffer_utilisation[u] = in_flight / static_cast<double>(m.buffer);
  }
  const double th = options.saturation_threshold;
  for (std::size_t u = 0; u < n; ++u) {
    if (s.cpu_utilisation[u] >= th) s.saturated.push_back({u, Resource::cpu, s.cpu_utilisation[u]});
    if (s.link_utilisation[u] >= th) s.saturated.push_back({u, Resource::link, s.link_utilisation[u]});
    if (s.buffer_utilisation[u] >= th) s.saturated.push_back({u, Resource::buffer, s.buffer_utilisation[u]});
    if (s.port_utilisation[u] >= th) {
      s.saturated.push_back({u,
                             m.comm_model == model::CommModel::one_port ? Resource::port
                                                                        : Resource::out_bandwidth,
                             s.port_utilisation[u]});
    }
  }
  return s;
}
}  // namespace

}  // namespace treefarm::lp
