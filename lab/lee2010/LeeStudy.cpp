#include "lab/lee2010/LeeStudy.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime/exec/Backfill.hpp"

namespace treefarm::lab::lee2010 {

const char* to_string(LeeScheme scheme) {
  switch (scheme) {
    case LeeScheme::vanilla: return "Vanilla";
    case LeeScheme::l: return "L";
    case LeeScheme::li_push: return "LI-PUSH";
    case LeeScheme::li_pull: return "LI-PULL";
    case LeeScheme::liq_push: return "LIQ-PUSH";
    case LeeScheme::liq_pull: return "LIQ-PULL";
    case LeeScheme::cent: return "CENT";
  }
  return "?";
}

std::vector<LeeScheme> all_lee_schemes() {
  return {LeeScheme::vanilla, LeeScheme::l,        LeeScheme::li_push, LeeScheme::li_pull,
          LeeScheme::liq_push, LeeScheme::liq_pull, LeeScheme::cent};
}

namespace {

constexpr double run_min = 30 * 60.0;  // slide 19: run times uniform in 30–90 min
constexpr double run_max = 90 * 60.0;
// Cores a job asks for when it specifies them, and how often (ours; the slides give none).
constexpr std::array<std::uint32_t, 4> job_cores = {1, 2, 4, 8};
constexpr std::array<double, 4> job_cores_p = {0.4, 0.3, 0.2, 0.1};
// Per-node and per-tick cap on queue-balancing moves (PUSH and PULL alike).
constexpr int balance_moves = 8;

struct Node {
  std::uint32_t cores = 1;
  double speed = 1;            // GHz
  std::uint64_t memory = 0;    // MB
  std::uint64_t disk = 0;      // GB
  std::uint32_t free_cores = 0;
  std::uint64_t free_memory = 0;
  exec::Backfill queue;
  std::vector<std::uint32_t> neighbours;
  explicit Node(bool backfill) : queue(backfill) {}
};

struct Job {
  double arrival = 0, runtime = 0;
  std::uint32_t cores = 1;
  std::uint64_t memory = 0;  // MB, 0 = don't care
  double speed = 0;          // GHz, 0 = don't care
  std::uint64_t disk = 0;    // GB, 0 = don't care
  double start = -1;
  std::int64_t node = -1;
};

/// What a node's neighbours know of it: its last heartbeat (slide 3, "stale load
/// information"), refreshed at every round of dynamic scheduling.
struct View {
  std::uint32_t free_cores = 0;
  std::uint64_t free_memory = 0;
  std::size_t queue = 0;
  std::uint32_t nbc = 0;
  double sum_cores = 0, sum_memory = 0;  // running + waiting requirements
};

enum class EventKind { completion = 0, arrival = 1, tick = 2 };
struct Event {
  double t;
  EventKind kind;
  std::uint64_t index;
  bool operator>(const Event& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    return index > o.index;
  }
};

class Grid {
 public:
  Grid(const LeeStudyOptions& o, LeeScheme s) : o_(o), s_(s), rng_(o.seed + 1), place_(o.seed + 2) {
    if (o.nodes < 2 || o.jobs < 1) throw std::invalid_argument("lee2010 study: need >= 2 nodes and >= 1 job");
    if (!(o.load > 0) || o.constraint_ratio < 0 || o.constraint_ratio > 1 || !(o.period > 0))
      throw std::invalid_argument("lee2010 study: load > 0, constraint ratio in [0, 1] and period > 0");
    build();
  }

  LeeResult run() {
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
    events_ = &events;
    for (std::uint64_t j = 0; j < jobs_.size(); ++j) events.push({jobs_[j].arrival, EventKind::arrival, j});
    const bool dynamic = s_ != LeeScheme::vanilla && s_ != LeeScheme::l && s_ != LeeScheme::cent;
    if (dynamic) events.push({o_.period, EventKind::tick, 0});
    while (!events.empty()) {
      const Event e = events.top();
      events.pop();
      now_ = e.t;
      switch (e.kind) {
        case EventKind::arrival: arrive(e.index); break;
        case EventKind::completion: complete(e.index); break;
        case EventKind::tick:
          tick();
          if (arrived_ < jobs_.size() || started_ < placed_) events.push({now_ + o_.period, EventKind::tick, 0});
          break;
      }
    }
    if (started_ != placed_) throw std::logic_error("lee2010 study: " + std::to_string(placed_ - started_) + " jobs never started");
    LeeResult r;
    r.scheme = s_;
    r.mean_interarrival = tau_;
    std::vector<double> waits;
    for (const auto& j : jobs_) {
      if (j.node < 0) continue;
      waits.push_back(j.start - j.arrival);
      r.makespan = std::max(r.makespan, j.start + j.runtime);
    }
    r.unplaceable = jobs_.size() - waits.size();
    if (!waits.empty()) {
      double sum = 0;
      for (double w : waits) sum += w;
      r.mean_wait = sum / static_cast<double>(waits.size());
      std::sort(waits.begin(), waits.end());
      r.p95_wait = waits[std::min(waits.size() - 1, static_cast<std::size_t>(0.95 * static_cast<double>(waits.size())))];
    }
    r.messages = messages_;
    r.migrations = migrations_;
    return r;
  }

 private:
  // ---- the grid and the jobs (the same for every scheme under one seed) ----
  void build() {
    std::mt19937_64 g(o_.seed);
    const std::array<std::uint32_t, 4> cores = {1, 2, 4, 8};  // slide 19
    const std::array<double, 5> speeds = {1.0, 1.5, 2.0, 2.5, 3.0};
    const std::array<std::uint64_t, 5> memories = {1024, 2048, 4096, 8192, 16384};
    const std::array<std::uint64_t, 4> disks = {20, 40, 80, 160};
    const auto pick = [&g](auto& a) { return a[std::uniform_int_distribution<std::size_t>(0, a.size() - 1)(g)]; };
    const bool backfill = s_ != LeeScheme::vanilla;
    double total_cores = 0;
    for (std::uint32_t i = 0; i < o_.nodes; ++i) {
      Node n(backfill);
      n.cores = pick(cores);
      n.speed = pick(speeds);
      n.memory = pick(memories);
      n.disk = pick(disks);
      n.free_cores = n.cores;
      n.free_memory = n.memory;
      total_cores += n.cores;
      nodes_.push_back(std::move(n));
    }
    // Neighbours: each node links to neighbours/2 random others (both ways).
    std::uniform_int_distribution<std::uint32_t> any(0, o_.nodes - 1);
    for (std::uint32_t i = 0; i < o_.nodes; ++i)
      for (std::uint32_t k = 0; k < std::max(1u, o_.neighbours / 2); ++k) {
        std::uint32_t m = any(g);
        if (m == i || std::find(nodes_[i].neighbours.begin(), nodes_[i].neighbours.end(), m) != nodes_[i].neighbours.end())
          continue;
        nodes_[i].neighbours.push_back(m);
        nodes_[m].neighbours.push_back(i);
      }
    // Jobs: Poisson arrivals whose rate makes the offered load o_.load.
    const double r = o_.constraint_ratio;
    double mean_cores = 1 - r;
    for (std::size_t k = 0; k < job_cores.size(); ++k) mean_cores += r * job_cores_p[k] * job_cores[k];
    const double rate = o_.load * total_cores / ((run_min + run_max) / 2 * mean_cores);  // jobs/s
    tau_ = 1 / rate;
    std::exponential_distribution<double> gap(rate);
    std::uniform_real_distribution<double> runtime(run_min, run_max), coin(0, 1);
    std::discrete_distribution<std::size_t> cores_of(job_cores_p.begin(), job_cores_p.end());
    const std::array<std::uint64_t, 4> job_memory = {512, 1024, 2048, 4096};
    const std::array<double, 4> job_speed = {1.0, 1.5, 2.0, 2.5};
    const std::array<std::uint64_t, 4> job_disk = {10, 20, 40, 80};
    double t = 0;
    for (std::uint32_t j = 0; j < o_.jobs; ++j) {
      t += gap(g);
      Job job;
      job.arrival = t;
      job.runtime = runtime(g);
      if (coin(g) < r) job.cores = job_cores[cores_of(g)];
      if (coin(g) < r) job.memory = pick(job_memory);
      if (coin(g) < r) job.speed = pick(job_speed);
      if (coin(g) < r) job.disk = pick(job_disk);
      jobs_.push_back(job);
    }
  }

  bool can_run(const Job& j, const Node& n) const {  // slide 7: CPU >= C_J && Memory >= M_J ...
    return n.cores >= j.cores && n.memory >= j.memory && n.speed >= j.speed && n.disk >= j.disk;
  }
  bool fits_now(const Job& j, std::uint32_t free_cores, std::uint64_t free_memory) const {
    return j.cores <= free_cores && j.memory <= free_memory;
  }
  exec::BackfillResources resources(const Node& n) const {
    return {n.free_cores, n.free_memory, n.cores, n.memory};
  }
  exec::BackfillEntry entry_of(std::uint64_t j) const { return {j, jobs_[j].cores, jobs_[j].memory, 0}; }

  // ---- starting and ending jobs ----
  void start(std::uint64_t j, std::uint32_t ni) {
    Job& job = jobs_[j];
    Node& n = nodes_[ni];
    if (job.start >= 0) throw std::logic_error("lee2010 study: job " + std::to_string(j) + " started twice");
    if (!can_run(job, n) || !fits_now(job, n.free_cores, n.free_memory))
      throw std::logic_error("lee2010 study: job " + std::to_string(j) + " started where it does not fit");
    n.free_cores -= job.cores;
    n.free_memory -= job.memory;
    job.start = now_;
    job.node = ni;
    ++started_;
    events_->push({now_ + job.runtime, EventKind::completion, j});
  }

  /// Intra-node scheduling (slides 13–14; strict FIFO for Vanilla): the node's
  /// exec::Backfill decides.
  void start_local(std::uint32_t ni) {
    Node& n = nodes_[ni];
    while (auto e = n.queue.start_next(n.free_cores, n.free_memory, n.cores, n.memory)) start(e->id, ni);
  }

  void arrive(std::uint64_t j) {
    ++arrived_;
    std::vector<std::uint32_t> capable;
    for (std::uint32_t i = 0; i < nodes_.size(); ++i)
      if (can_run(jobs_[j], nodes_[i])) capable.push_back(i);
    if (capable.empty()) return;  // unplaceable: counted in the result
    ++placed_;
    // Drawn for CENT too, so that every scheme sees the same placements.
    const auto ni = capable[std::uniform_int_distribution<std::size_t>(0, capable.size() - 1)(place_)];
    if (s_ == LeeScheme::cent) {
      central_.push_back(j);
      schedule_central();
      return;
    }
    nodes_[ni].queue.push(j, jobs_[j].cores, jobs_[j].memory);
    start_local(ni);
  }

  void complete(std::uint64_t j) {
    const Job& job = jobs_[j];
    Node& n = nodes_[static_cast<std::size_t>(job.node)];
    n.free_cores += job.cores;
    n.free_memory += job.memory;
    if (s_ == LeeScheme::cent)
      schedule_central();
    else
      start_local(static_cast<std::uint32_t>(job.node));
  }

  /// CENT (slide 20): one global FIFO queue with global, current knowledge; any waiting
  /// job that fits some node now starts there (the node with the least Backfill
  /// Balanced objective, the fastest CPU on a tie).
  void schedule_central() {
    std::vector<std::uint32_t> open;  // nodes with a free core
    for (std::uint32_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].free_cores > 0) open.push_back(i);
    for (auto it = central_.begin(); it != central_.end() && !open.empty();) {
      const Job& job = jobs_[*it];
      std::optional<std::uint32_t> best;
      double best_obj = 0;
      for (const std::uint32_t i : open) {
        const Node& n = nodes_[i];
        if (!can_run(job, n) || !fits_now(job, n.free_cores, n.free_memory)) continue;
        const double obj = exec::backfill_balanced_objective(entry_of(*it), resources(n));
        if (!best || obj < best_obj - 1e-12 || (obj < best_obj + 1e-12 && n.speed > nodes_[*best].speed)) {
          best = i;
          best_obj = obj;
        }
      }
      if (best) {
        start(*it, *best);
        if (nodes_[*best].free_cores == 0) open.erase(std::find(open.begin(), open.end(), *best));
        it = central_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // ---- loads (slide 17: per resource, the jobs' requirements over the node's capability; the max) ----
  std::pair<double, double> sums(const Node& n) const {
    double c = n.cores - n.free_cores, m = static_cast<double>(n.memory - n.free_memory);
    for (const auto& e : n.queue.entries()) {
      c += e.cores;
      m += static_cast<double>(e.memory);
    }
    return {c, m};
  }
  static double load(const Node& n, double sum_cores, double sum_memory) {
    return std::max(sum_cores / n.cores, sum_memory / static_cast<double>(n.memory));
  }

  void heartbeat() {
    views_.resize(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      auto [c, m] = sums(n);
      views_[i] = {n.free_cores, n.free_memory, n.queue.size(), n.queue.max_bypass_count(), c, m};
    }
  }

  void move(std::uint32_t from, std::size_t index, std::uint32_t to) {
    const exec::BackfillEntry e = nodes_[from].queue.remove(index);
    nodes_[to].queue.push(e);  // keeps its BC (slide 15)
    ++migrations_;
    start_local(to);
  }

  /// One round of dynamic scheduling (slide 12: invoked periodically), nodes in random order.
  void tick() {
    heartbeat();
    std::vector<std::uint32_t> order(nodes_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng_);
    const bool push = s_ == LeeScheme::li_push || s_ == LeeScheme::liq_push;
    const bool balance = s_ == LeeScheme::liq_push || s_ == LeeScheme::liq_pull;
    for (auto i : order) push ? inter_push(i) : inter_pull(i);
    if (balance)
      for (auto i : order) push ? balance_push(i) : balance_pull(i);
  }

  /// Slide 16, PULL: an idle receiver asks the neighbour with the longest queue (as last
  /// heard); the sender answers with a job that can start on the receiver now and whose
  /// BC >= the receiver's NBC (slide 15), the least BM × FM if several; else a
  /// PULL-Reject, and the receiver asks the next.
  void inter_pull(std::uint32_t ri) {
    Node& r = nodes_[ri];
    if (r.free_cores == 0 || r.queue.pick(r.free_cores, r.free_memory, r.cores, r.memory)) return;
    std::vector<std::uint32_t> senders;
    for (auto m : r.neighbours)
      if (views_[m].queue > 0) senders.push_back(m);
    std::stable_sort(senders.begin(), senders.end(), [&](auto a, auto b) { return views_[a].queue > views_[b].queue; });
    for (std::size_t k = 0; k < senders.size() && r.free_cores > 0;) {
      Node& s = nodes_[senders[k]];
      messages_ += 2;  // PULL-Request, and the job or a PULL-Reject
      const std::uint32_t nbc = r.queue.max_bypass_count();
      std::optional<std::size_t> best;
      double best_obj = 0;
      for (std::size_t q = 0; q < s.queue.size(); ++q) {
        const auto& e = s.queue.entries()[q];
        const Job& job = jobs_[e.id];
        if (e.bypass_count < nbc || !can_run(job, r) || !fits_now(job, r.free_cores, r.free_memory)) continue;
        const double obj = exec::backfill_balanced_objective(e, resources(r));
        if (!best || obj < best_obj - 1e-12) {
          best = q;
          best_obj = obj;
        }
      }
      if (!best) {
        ++k;  // rejected: the next potential sender
        continue;
      }
      move(senders[k], *best, ri);  // and ask the same sender again while resources remain
    }
  }

  /// Slide 16, PUSH: a sender matches each waiting job with its neighbours' residual
  /// resources as last heard, and sends it to the one with the least BM × FM, the
  /// fastest CPU on a tie; BC >= the target's NBC (slide 15).
  void inter_push(std::uint32_t si) {
    Node& s = nodes_[si];
    for (std::size_t q = 0; q < s.queue.size();) {
      const auto e = s.queue.entries()[q];
      const Job& job = jobs_[e.id];
      std::optional<std::uint32_t> best;
      double best_obj = 0;
      for (auto m : s.neighbours) {
        const View& v = views_[m];
        const Node& n = nodes_[m];
        if (e.bypass_count < v.nbc || !can_run(job, n) || !fits_now(job, v.free_cores, v.free_memory)) continue;
        const double obj = exec::backfill_balanced_objective(e, {v.free_cores, v.free_memory, n.cores, n.memory});
        if (!best || obj < best_obj - 1e-12 || (obj < best_obj + 1e-12 && n.speed > nodes_[*best].speed)) {
          best = m;
          best_obj = obj;
        }
      }
      if (!best) {
        ++q;
        continue;
      }
      View& v = views_[*best];  // what the sender now believes of the target
      v.free_cores -= job.cores;
      v.free_memory -= job.memory;
      ++messages_;  // the job
      move(si, q, *best);
    }
  }

  /// The gain of moving waiting job e from a (sums ca, ma) to b (sums cb, mb) for the
  /// balancing objective (slide 17: TLL = sum of the two loads, MLL = the larger).
  double gain(const Node& a, double ca, double ma, const Node& b, double cb, double mb, const exec::BackfillEntry& e) const {
    const double la = load(a, ca, ma), lb = load(b, cb, mb);
    const double la2 = load(a, ca - e.cores, ma - static_cast<double>(e.memory));
    const double lb2 = load(b, cb + e.cores, mb + static_cast<double>(e.memory));
    return o_.balance == LeeBalance::tll ? (la + lb) - (la2 + lb2) : std::max(la, lb) - std::max(la2, lb2);
  }

  /// Slide 17 over PUSH: a node moves waiting jobs (from the back of its queue) to the
  /// neighbour where the move lowers the objective most, as last heard of it.
  void balance_push(std::uint32_t si) {
    Node& s = nodes_[si];
    for (int moves = 0; moves < balance_moves && !s.queue.empty();) {
      auto [cs, ms] = sums(s);
      std::optional<std::pair<std::size_t, std::uint32_t>> best;
      double best_gain = 1e-9;
      for (std::size_t q = s.queue.size(); q-- > 0;) {
        const auto& e = s.queue.entries()[q];
        for (auto m : s.neighbours) {
          const View& v = views_[m];
          if (e.bypass_count < v.nbc || !can_run(jobs_[e.id], nodes_[m])) continue;
          const double g = gain(s, cs, ms, nodes_[m], v.sum_cores, v.sum_memory, e);
          if (g > best_gain) {
            best_gain = g;
            best = std::pair{q, m};
          }
        }
      }
      if (!best) return;
      const auto& e = s.queue.entries()[best->first];
      views_[best->second].sum_cores += e.cores;
      views_[best->second].sum_memory += static_cast<double>(e.memory);
      ++messages_;
      move(si, best->first, best->second);
      ++moves;
    }
  }

  /// Slide 17 over PULL: a node asks the neighbour with the highest load (as last heard)
  /// above its own; the sender answers with the waiting job whose move lowers the
  /// objective most (current loads, BC >= the receiver's NBC) or a reject.
  void balance_pull(std::uint32_t ri) {
    Node& r = nodes_[ri];
    std::vector<std::uint32_t> senders;
    {
      auto [cr, mr] = sums(r);
      const double own = load(r, cr, mr);
      for (auto m : r.neighbours)
        if (load(nodes_[m], views_[m].sum_cores, views_[m].sum_memory) > own && views_[m].queue > 0) senders.push_back(m);
    }
    std::stable_sort(senders.begin(), senders.end(), [&](auto a, auto b) {
      return load(nodes_[a], views_[a].sum_cores, views_[a].sum_memory) > load(nodes_[b], views_[b].sum_cores, views_[b].sum_memory);
    });
    int moves = 0;
    for (std::size_t k = 0; k < senders.size() && moves < balance_moves;) {
      Node& s = nodes_[senders[k]];
      messages_ += 2;  // request, and the job or a reject
      auto [cs, ms] = sums(s);
      auto [cr, mr] = sums(r);
      const std::uint32_t nbc = r.queue.max_bypass_count();
      std::optional<std::size_t> best;
      double best_gain = 1e-9;
      for (std::size_t q = 0; q < s.queue.size(); ++q) {
        const auto& e = s.queue.entries()[q];
        if (e.bypass_count < nbc || !can_run(jobs_[e.id], r)) continue;
        const double g = gain(s, cs, ms, r, cr, mr, e);
        if (g > best_gain) {
          best_gain = g;
          best = q;
        }
      }
      if (!best) {
        ++k;
        continue;
      }
      move(senders[k], *best, ri);
      ++moves;
    }
  }

  const LeeStudyOptions o_;
  const LeeScheme s_;
  std::mt19937_64 rng_;    // the order of the nodes in a round
  std::mt19937_64 place_;  // initial placement: the same for every scheme
  std::vector<Node> nodes_;
  std::vector<Job> jobs_;
  std::vector<View> views_;
  std::deque<std::uint64_t> central_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>>* events_ = nullptr;
  double now_ = 0, tau_ = 0;
  std::uint64_t arrived_ = 0, placed_ = 0, started_ = 0, messages_ = 0, migrations_ = 0;
};

}  // namespace

LeeResult run_lee_study(const LeeStudyOptions& options, LeeScheme scheme) { return Grid(options, scheme).run(); }

}  // namespace treefarm::lab::lee2010
