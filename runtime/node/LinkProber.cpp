#include "runtime/node/LinkProber.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace treefarm::node {

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double finite_or_zero(double x) { return std::isfinite(x) ? x : 0.0; }
}  // namespace

BandwidthSummary summarize_bandwidths(std::vector<double> samples) {
  if (samples.empty()) return {};
  for (double& s : samples)
    if (!(s > 0)) s = inf;  // too fast to resolve
  const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
  return {finite_or_zero(median_of(samples)), finite_or_zero(*lo), finite_or_zero(*hi)};
}

LinkProber::LinkProber(std::string node, Payload small, Payload big, Send send, Report report)
    : node_(std::move(node)), small_(std::move(small)), big_(std::move(big)), send_(std::move(send)), report_(std::move(report)) {}

void LinkProber::child_joined(PeerId peer, const std::string& name, double now) {
  children_[peer] = Link{name, {}, {}};
  queue_.push_back(peer);
  if (!current_ && !fanout_) next(now);
}

void LinkProber::child_left(PeerId peer, double now) {
  children_.erase(peer);
  if (fanout_ || !fanout_samples_.empty()) {  // its acknowledgements will not come: measure again without it
    fanout_.reset();
    fanout_samples_.clear();
    fanout_children_ = 0;
  }
  if (current_ && current_->peer == peer) current_.reset();
  if (!current_) next(now);
}

void LinkProber::next(double now) {
  if (fanout_ || current_) return;
  while (!queue_.empty()) {
    const PeerId peer = queue_.front();
    queue_.pop_front();
    if (!children_.contains(peer)) continue;
    current_.emplace(Round{peer, 0, 0, 0, -1});
    send_probe(*current_, now);
    return;
  }
  start_fanout(now);
}

void LinkProber::send_probe(Round& round, double now) {
  round.sent_at = now;
  if (round.small_done < small_probes) {
    send_(round.peer, ++round.seq, small_);
    return;
  }
  for (int i = 0; i < big_probes; ++i) send_(round.peer, ++round.seq, big_);
}

void LinkProber::on_ack(PeerId peer, std::uint32_t seq, double now) {
  if (seq & fanout_bit) {
    on_fanout_ack(peer, now);
    return;
  }
  if (!current_ || current_->peer != peer) return;
  Round& r = *current_;
  if (seq != r.seq) return;  // wait for the last of the stream
  if (r.small_done < small_probes) {
    const double rtt = now - r.sent_at;
    r.overhead = r.overhead < 0 ? rtt : std::min(r.overhead, rtt);
    ++r.small_done;
    send_probe(r, now);
    return;
  }
  finish_round(r, now);
}

void LinkProber::finish_round(Round& r, double now) {
  const PeerId peer = r.peer;
  Link& link = children_.at(peer);
  overhead_ = overhead_ > 0 ? std::min(overhead_, r.overhead) : r.overhead;
  const double transfer = now - r.sent_at - r.overhead;
  const double bytes = static_cast<double>(big_->size()) * big_probes;
  link.bandwidths.push_back(transfer > 0 ? bytes / transfer : 0);
  link.round_trips.push_back(std::max(0.0, r.overhead));
  current_.reset();
  if (link.bandwidths.size() < static_cast<std::size_t>(rounds)) {
    queue_.push_back(peer);  // its next round after the other children's
  } else {
    using What = net::msg::Measure::What;
    const auto s = summarize_bandwidths(link.bandwidths);
    // The median last: the master counts a link as measured when it arrives, and
    // messages up the tree keep their order.
    report_(net::msg::Measure{link.name, "", What::link_round_trip, median_of(link.round_trips)});
    report_(net::msg::Measure{link.name, "", What::link_bandwidth_min, s.min});
    report_(net::msg::Measure{link.name, "", What::link_bandwidth_max, s.max});
    report_(net::msg::Measure{link.name, "", What::link_bandwidth, s.median});
  }
  next(now);
}

void LinkProber::start_fanout(double now) {
  if (children_.size() < 2 || children_.size() == fanout_children_) return;
  if (fanout_samples_children_ != children_.size()) fanout_samples_.clear();  // a child joined since
  fanout_samples_children_ = children_.size();
  fanout_ = Fanout{now, children_.size() * big_probes, 0, {}, -1};
  for (const auto& [peer, link] : children_)
    for (int i = 0; i < big_probes; ++i) send_(peer, fanout_bit | static_cast<std::uint32_t>(i), big_);
}

/// The aggregate is taken over the time until the first child had all its probes — while
/// every link was still busy: later, only the slower links would be sending. It counts
/// the bytes every child had received by then, the probe under way included: each
/// child's acknowledged bytes interpolated between its acknowledgements around that
/// instant (counting whole acknowledged probes only left out up to a probe per
/// slower child, and on the emulated lan-star, links of 50 to 1 MB/s, measured an
/// aggregate of 55 MB/s where the run carried 62).
void LinkProber::on_fanout_ack(PeerId peer, double now) {
  if (!fanout_) return;
  ++fanout_->received;
  auto& times = fanout_->acks[peer];
  times.push_back(now);
  if (times.size() == static_cast<std::size_t>(big_probes) && fanout_->first_done < 0) fanout_->first_done = now;
  if (fanout_->received < fanout_->expected) return;
  const double start = fanout_->sent_at + overhead_, end = fanout_->first_done;
  double probes = 0;  // received by `end`, fractions included
  for (const auto& [child, t] : fanout_->acks) {
    double before = start;
    for (double at : t) {
      if (at <= end) {
        probes += 1;
        before = at;
        continue;
      }
      if (at > before) probes += (end - before) / (at - before);
      break;
    }
  }
  const double transfer = end - start;
  fanout_samples_.push_back(transfer > 0 ? static_cast<double>(big_->size()) * probes / transfer : 0);
  fanout_.reset();
  if (fanout_samples_.size() >= static_cast<std::size_t>(rounds)) {
    fanout_children_ = children_.size();
    report_(net::msg::Measure{node_, "", net::msg::Measure::What::out_bandwidth,
                              summarize_bandwidths(fanout_samples_).median});
    fanout_samples_.clear();
  }
  next(now);
}

}  // namespace treefarm::node
