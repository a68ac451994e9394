#include "runtime/core/Migration.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

#include "runtime/core/NodeState.hpp"

namespace treefarm::core {

namespace {
/// The modes' names, indexed by MigrationMode.
constexpr std::array<const char*, 3> mode_names{"off", "pull", "push"};
constexpr std::array<const char*, 3> balance_names{"off", "tll", "mll"};

/// A child's estimated queue: what its subtree holds beyond what it computes at once (the
/// tasks in flight to it), less `asked` (tasks already pulled from it).
std::int64_t queue_of(const NodeState& state, ChildId id, std::uint32_t asked) {
  const auto& c = state.children.at(id);
  return static_cast<std::int64_t>(c.in_flight) - std::max<std::int64_t>(1, c.info.cores) - static_cast<std::int64_t>(asked);
}
}  // namespace

const char* to_string(MigrationMode mode) { return mode_names.at(static_cast<std::size_t>(mode)); }

std::optional<MigrationMode> migration_from_string(std::string_view text) {
  for (std::size_t i = 0; i < mode_names.size(); ++i)
    if (text == mode_names[i]) return static_cast<MigrationMode>(i);
  return std::nullopt;
}

const char* to_string(BalanceMode mode) { return balance_names.at(static_cast<std::size_t>(mode)); }

std::optional<BalanceMode> balance_from_string(std::string_view text) {
  for (std::size_t i = 0; i < balance_names.size(); ++i)
    if (text == balance_names[i]) return static_cast<BalanceMode>(i);
  return std::nullopt;
}

Migration::Migration(MigrationMode mode, Seconds retry, BalanceMode balance) : mode_(mode), balance_(balance), retry_(retry) {
  if (!(retry >= 0)) throw std::invalid_argument("migration: retry must be >= 0 seconds");
  if (balance != BalanceMode::off && mode == MigrationMode::off)
    throw std::invalid_argument(std::string("queue balancing (") + to_string(balance) +
                                ") moves tasks by migration: it needs migration pull or push");
}

// ---- backfilling counters (papers/lee2010 slides 13 and 15) ---------------------------

void Migration::on_assign(const std::deque<TaskRef>& buffer, std::size_t chosen) {
  if (!enabled() || chosen >= buffer.size()) return;
  // The tasks ahead of the chosen one are bypassed by it (slide 13: "counts number of
  // other jobs that have bypassed the job").
  for (std::size_t i = 0; i < chosen; ++i) ++bc_[buffer[i].id];
  bc_.erase(buffer[chosen].id);
}

std::uint32_t Migration::bc(TaskId task) const {
  auto it = bc_.find(task);
  return it == bc_.end() ? 0 : it->second;
}

void Migration::set_bc(TaskId task, std::uint32_t value) {
  if (value == 0)
    bc_.erase(task);
  else
    bc_[task] = value;
}

std::uint32_t Migration::nbc(const std::deque<TaskRef>& buffer) const {
  std::uint32_t most = 0;
  if (bc_.empty()) return 0;
  for (const TaskRef& t : buffer) most = std::max(most, bc(t.id));
  return most;
}

// ---- sender side ------------------------------------------------------------------------

std::vector<std::size_t> Migration::pick_for_pull(const NodeState& state, std::uint32_t count,
                                                  std::uint32_t target_nbc) const {
  std::vector<std::size_t> picked;
  // Any node answers a pull, whatever its own mode (the puller's setting decides); its
  // counters are only kept when its mode is on (they are all 0 otherwise).
  if (count == 0) return picked;
  // The first tasks of the buffer are the ones this node starts next: it keeps as many as
  // it computes at once and gives from the back (slide 16: "a job that can be backfilled").
  const std::size_t keep = std::max<std::size_t>(1, state.config.cores);
  for (std::size_t i = state.buffer.size(); i > keep && picked.size() < count; --i) {
    const TaskId id = state.buffer[i - 1].id;
    if (bc(id) < target_nbc) continue;          // slide 15: BC >= the target's NBC
    if (given_back_.contains(id)) continue;     // visited once: never a loop
    picked.push_back(i - 1);
  }
  return picked;
}

void Migration::gave_back(TaskId task) {
  given_back_.insert(task);
  bc_.erase(task);
  ++tasks_given_;
}

// ---- receiver side ----------------------------------------------------------------------

std::optional<action::SendPull> Migration::next_pull(const NodeState& state) {
  if (mode_ != MigrationMode::pull) return std::nullopt;
  // Idle: requests wait and nothing is buffered (a policy that holds buffered tasks back
  // on purpose is not second-guessed).
  if (!state.buffer.empty() || state.requests.empty()) return std::nullopt;
  std::uint64_t asked = 0;
  for (const auto& [c, n] : outstanding_) asked += n;
  if (asked >= state.requests.size()) return std::nullopt;
  if (balance_ != BalanceMode::off) return next_balanced_pull(state, asked);

  // A child's estimated queue, less what was asked of it already; the executor's is 0.
  auto estimate = [&](ChildId id) { return queue_of(state, id, outstanding(id)); };
  std::optional<ChildId> best;
  std::int64_t longest = 0;
  std::uint64_t best_count = 0;
  for (const auto& [id, c] : state.children) {
    if (auto h = hold_until_.find(id); h != hold_until_.end() && h->second > state.now) continue;
    const std::int64_t queue = estimate(id);
    if (queue <= 0 || queue <= longest) continue;
    // Pulled only for requesters whose queue is shorter by 2 or more: a task then moves
    // from a longer queue to a shorter one and never back (a child refilling its buffer is
    // not idle; moving tasks between equal queues would only ping-pong them).
    std::uint64_t eligible = 0;
    std::int64_t shortest = queue;
    for (const PendingRequest& r : state.requests) {
      if (!r.from.local && r.from.child == id) continue;
      const std::int64_t q = r.from.local ? 0 : std::max<std::int64_t>(0, estimate(r.from.child));
      if (q + 1 >= queue) continue;
      ++eligible;
      shortest = std::min(shortest, q);
    }
    if (eligible <= asked) continue;
    longest = queue;
    best = id;
    // Half the difference evens the two queues.
    best_count = std::min<std::uint64_t>(eligible - asked, static_cast<std::uint64_t>(std::max<std::int64_t>(1, (queue - shortest) / 2)));
  }
  if (!best) return std::nullopt;
  // A child's own buffer holds at most B tasks (every node of a run has the same B).
  const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(best_count, state.config.buffer));
  outstanding_[*best] += count;
  ++pulls_sent_;
  return action::SendPull{*best, count, nbc(state.buffer)};
}

void Migration::answered(ChildId child, std::size_t n, std::uint32_t rejected, Seconds now) {
  auto it = outstanding_.find(child);
  if (it != outstanding_.end()) {
    const std::uint64_t done = n + rejected;
    it->second = done >= it->second ? 0 : static_cast<std::uint32_t>(it->second - done);
    if (it->second == 0) outstanding_.erase(it);
  }
  rejects_ += rejected;
  if (n > 0) {
    rejected_in_row_.erase(child);
    hold_until_.erase(child);
  } else if (rejected > 0) {
    const std::uint32_t row = std::min<std::uint32_t>(rejected_in_row_[child]++, 4);
    hold_until_[child] = now + retry_ * static_cast<double>(1u << row);
  }
}

std::optional<Seconds> Migration::next_deadline(const NodeState& state) const {
  if (mode_ == MigrationMode::push)  // the parent refused our last push: try again at the hold's end
    return parent_status_.free > 0 && pushing_.empty() && parent_hold_until_ > state.now
               ? std::optional<Seconds>(parent_hold_until_) : std::nullopt;
  if (mode_ != MigrationMode::pull || !state.buffer.empty() || state.requests.empty()) return std::nullopt;
  std::optional<Seconds> due;
  for (const auto& [id, t] : hold_until_)
    if (t > state.now && (!due || t < *due)) due = t;
  return due;
}

std::uint32_t Migration::outstanding(ChildId child) const {
  auto it = outstanding_.find(child);
  return it == outstanding_.end() ? 0 : it->second;
}

void Migration::child_left(ChildId child) {
  status_sent_.erase(child);
  std::erase_if(answers_, [&](const auto& a) { return a.first == child; });
  outstanding_.erase(child);
  rejected_in_row_.erase(child);
  hold_until_.erase(child);
}

// ---- PUSH (papers/lee2010 slide 16) -----------------------------------------------------

std::optional<action::PushTasks> Migration::next_push(NodeState& state) {
  if (mode_ != MigrationMode::push || state.config.is_root || !pushing_.empty()) return std::nullopt;
  const PushStatus& p = parent_status_;
  if (p.free == 0 || parent_hold_until_ > state.now) return std::nullopt;
  // Slide 16's objective in the tree: the target requester with the shortest queue; a
  // task moves only to a queue at least 2 shorter, half the difference at most (as PULL).
  const std::uint64_t mine = state.buffer.size();
  if (mine < std::uint64_t{p.queue} + 2) return std::nullopt;
  const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.free, std::max<std::uint64_t>(1, (mine - p.queue) / 2)));
  const auto picked = pick_for_pull(state, count, p.nbc);  // descending; BC >= the parent's NBC
  if (picked.empty()) return std::nullopt;
  action::PushTasks push;
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
    const TaskRef t = state.buffer[*it];
    push.tasks.push_back(t);
    push.bcs.push_back(bc(t.id));
    pushing_.emplace_back(t, bc(t.id));
  }
  for (std::size_t i : picked) state.buffer.erase(state.buffer.begin() + static_cast<std::ptrdiff_t>(i));
  ++pushes_sent_;
  return push;
}

std::vector<TaskRef> Migration::push_answered(NodeState& state, const std::vector<TaskRef>& refused) {
  if (pushing_.empty()) throw std::invalid_argument("an answer to a push that was not sent");
  for (std::size_t i = 0; i < refused.size(); ++i) {
    if (std::none_of(pushing_.begin(), pushing_.end(), [&](const auto& p) { return p.first == refused[i]; }))
      throw std::invalid_argument("a push answer refusing a task that was not pushed");
    for (std::size_t j = 0; j < i; ++j)
      if (refused[j] == refused[i]) throw std::invalid_argument("a push answer refusing a task twice");
  }
  std::vector<TaskRef> taken;
  for (const auto& [t, b] : pushing_) {
    if (std::find(refused.begin(), refused.end(), t) != refused.end()) {
      state.buffer.push_back(t);  // it stays here, with its counter
      set_bc(t.id, b);
    } else {
      taken.push_back(t);
      gave_back(t.id);
    }
  }
  pushing_.clear();
  push_refused_ += refused.size();
  if (taken.empty()) {
    const std::uint32_t row = std::min<std::uint32_t>(parent_refused_in_row_++, 4);
    parent_hold_until_ = state.now + retry_ * static_cast<double>(1u << row);
  } else {
    parent_refused_in_row_ = 0;
    parent_hold_until_ = 0;
  }
  return taken;
}

PushStatus Migration::status_for(const NodeState& state, ChildId child) const {
  if (balance_ != BalanceMode::off) return balanced_status(state, child);
  std::uint64_t others = 0;
  std::int64_t shortest = std::numeric_limits<std::int64_t>::max();
  for (const PendingRequest& r : state.requests) {
    if (!r.from.local && r.from.child == child) continue;
    ++others;
    const std::int64_t q = r.from.local ? 0 : std::max<std::int64_t>(0, queue_of(state, r.from.child, outstanding(r.from.child)));
    shortest = std::min(shortest, q);
  }
  if (others <= state.buffer.size() || !state.children.contains(child)) return {};
  if (queue_of(state, child, outstanding(child)) < shortest + 2) return {};
  return PushStatus{static_cast<std::uint32_t>(std::min<std::uint64_t>(others - state.buffer.size(), state.config.buffer)),
                    static_cast<std::uint32_t>(std::min<std::int64_t>(shortest, std::numeric_limits<std::uint32_t>::max())),
                    nbc(state.buffer)};
}

void Migration::answer_push(ChildId child, std::vector<TaskRef> refused) { answers_.emplace_back(child, std::move(refused)); }

std::vector<action::SendPushReply> Migration::push_replies(const NodeState& state) {
  std::vector<action::SendPushReply> out;
  for (auto& [child, refused] : answers_) {
    if (!state.children.contains(child)) continue;
    const PushStatus s = mode_ == MigrationMode::push ? status_for(state, child) : PushStatus{};
    if (s == PushStatus{})
      status_sent_.erase(child);
    else
      status_sent_[child] = s;
    out.push_back(action::SendPushReply{child, true, std::move(refused), s});
  }
  answers_.clear();
  if (mode_ != MigrationMode::push) return out;
  // status_sent_ holds the children last told a non-zero status. While the buffer can
  // serve every request (the bulk of a run) every status is zero: only those are told.
  if (state.requests.size() <= state.buffer.size()) {
    for (const auto& [id, s] : status_sent_) out.push_back(action::SendPushReply{id, false, {}, PushStatus{}});
    status_sent_.clear();
    return out;
  }
  for (const auto& [id, c] : state.children) {
    const PushStatus s = status_for(state, id);
    auto it = status_sent_.find(id);
    if (it == status_sent_.end() ? s == PushStatus{} : it->second == s) continue;
    if (s == PushStatus{})
      status_sent_.erase(id);
    else
      status_sent_[id] = s;
    out.push_back(action::SendPushReply{id, false, {}, s});
  }
  return out;
}

// ---- queue balancing (papers/lee2010 slide 17) ------------------------------------------
// "For each resource, sum all jobs' requirements in the queue and normalize it with
// respect to node's resource capability; load on a node defined as the maximum of those"
// (Leinberger, HCW'00). In the tree a target is the executor or a child's subtree, and
// its queue is what it holds: the tasks running on the executor, the tasks in flight to
// the child (queued and running below it). "Minimize total local loads (TLL) / the
// maximum local load among neighbors (MLL)" over PUSH or PULL: a move of waiting tasks
// from a child to a requester is made when, and as far as, it lowers that objective.

namespace {
/// The capacity a target's load is normalised by: cores (at least 1), memory, disk.
Demand capacity_of(const NodeState& state, const Target& to) {
  if (to.local)
    return {std::max(1.0, static_cast<double>(state.config.cores)), static_cast<double>(state.config.memory),
            static_cast<double>(state.config.disk)};
  const ChildState& c = state.children.at(to.child);
  if (c.capacity)
    return {std::max<double>(1.0, static_cast<double>(c.capacity->cores)), static_cast<double>(c.capacity->memory),
            static_cast<double>(c.capacity->disk)};
  return {std::max(1.0, static_cast<double>(c.info.cores)), 0, 0};
}
const Demand& held_by(const NodeState& state, const Target& to) {
  return to.local ? state.local_held : state.children.at(to.child).held;
}
Demand scaled(const Demand& d, double n) { return {d.cores * n, d.memory * n, d.disk * n}; }
}  // namespace

double Migration::load(const NodeState& state, const Target& to, const Demand& extra) {
  Demand d = held_by(state, to);
  d += extra;
  const Demand cap = capacity_of(state, to);
  double l = std::max(0.0, d.cores) / cap.cores;
  if (cap.memory > 0) l = std::max(l, std::max(0.0, d.memory) / cap.memory);
  if (cap.disk > 0) l = std::max(l, std::max(0.0, d.disk) / cap.disk);
  return l;
}

std::uint32_t Migration::balanced_count(const NodeState& state, ChildId from, const Target& to, std::uint32_t limit) const {
  const ChildState& c = state.children.at(from);
  if (c.in_flight == 0 || limit == 0) return 0;
  const Demand unit = scaled(c.held, 1.0 / static_cast<double>(c.in_flight));
  const Target donor = Target::to_child(from);
  auto objective = [&](std::uint32_t n) {
    const double a = load(state, donor, scaled(unit, -static_cast<double>(n)));
    const double b = load(state, to, scaled(unit, static_cast<double>(n)));
    return balance_ == BalanceMode::tll ? a + b : std::max(a, b);
  };
  // Greedy, one task at a time, while the objective strictly decreases (a move between
  // equals changes nothing under TLL and would only ping-pong under MLL).
  std::uint32_t n = 0;
  double best = objective(0);
  while (n < limit) {
    const double next = objective(n + 1);
    if (!(next < best - 1e-12)) break;
    best = next;
    ++n;
  }
  return n;
}

std::optional<action::SendPull> Migration::next_balanced_pull(const NodeState& state, std::uint64_t asked) {
  // The requester this node pulls for: the pending one with the lowest load (the
  // executor or a child), and how many requests it has.
  std::optional<Target> to;
  double lowest = 0;
  for (const PendingRequest& r : state.requests) {
    const double l = load(state, r.from);
    if (!to || l < lowest) {
      to = r.from;
      lowest = l;
    }
  }
  if (!to) return std::nullopt;
  std::uint64_t wanted = 0;
  for (const PendingRequest& r : state.requests) wanted += r.from == *to ? 1 : 0;
  std::optional<ChildId> best;
  std::uint32_t best_count = 0;
  double best_load = 0;
  for (const auto& [id, c] : state.children) {
    if (!to->local && to->child == id) continue;
    if (auto h = hold_until_.find(id); h != hold_until_.end() && h->second > state.now) continue;
    // Waiting tasks only: what it holds beyond what it computes at once (as queue_of).
    const std::int64_t queue = queue_of(state, id, outstanding(id));
    if (queue <= 0) continue;
    const auto limit = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        {static_cast<std::uint64_t>(queue), wanted > asked ? wanted - asked : 0, state.config.buffer}));
    const std::uint32_t n = balanced_count(state, id, *to, limit);
    if (n == 0) continue;
    const double l = load(state, Target::to_child(id));
    if (!best || l > best_load) {  // the most loaded child that gains (slide 16: the longest queue)
      best = id;
      best_count = n;
      best_load = l;
    }
  }
  if (!best) return std::nullopt;
  outstanding_[*best] += best_count;
  ++pulls_sent_;
  return action::SendPull{*best, best_count, nbc(state.buffer)};
}

PushStatus Migration::balanced_status(const NodeState& state, ChildId child) const {
  if (!state.children.contains(child)) return {};
  std::uint64_t others = 0;
  std::optional<Target> to;
  double lowest = 0;
  for (const PendingRequest& r : state.requests) {
    if (!r.from.local && r.from.child == child) continue;
    ++others;
    const double l = load(state, r.from);
    if (!to || l < lowest) {
      to = r.from;
      lowest = l;
    }
  }
  if (!to || others <= state.buffer.size()) return {};
  const std::int64_t queue = queue_of(state, child, outstanding(child));
  if (queue <= 0) return {};
  const auto limit = static_cast<std::uint32_t>(std::min<std::uint64_t>(
      {static_cast<std::uint64_t>(queue), others - state.buffer.size(), state.config.buffer}));
  const std::uint32_t n = balanced_count(state, child, *to, limit);
  // The child pushes min(free, half its buffer less `queue`): with queue 0 it sends what
  // the objective asks for, up to half of what it holds.
  return n == 0 ? PushStatus{} : PushStatus{n, 0, nbc(state.buffer)};
}

}  // namespace treefarm::core
