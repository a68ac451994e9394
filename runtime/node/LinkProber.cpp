#include "runtime/node/LinkProber.hpp"

#include <algorithm>

namespace treefarm::node {

LinkProber::LinkProber(std::string node, Payload small, Payload big, Send send, Report report)
    : node_(std::move(node)), small_(std::move(small)), big_(std::move(big)), send_(std::move(send)), report_(std::move(report)) {}

void LinkProber::child_joined(PeerId peer, const std::string& name, double now) {
  children_[peer] = name;
  queue_.push_back(peer);
  if (!current_ && !fanout_) next(now);
}

void LinkProber::child_left(PeerId peer, double now) {
  children_.erase(peer);
  if (fanout_) {  // its acknowledgements will not come: measure again without it
    fanout_.reset();
    fanout_children_ = 0;
  }
  if (current_ && current_->first == peer) current_.reset();
  if (!current_) next(now);
}

void LinkProber::next(double now) {
  if (fanout_ || current_) return;
  while (!queue_.empty()) {
    const PeerId peer = queue_.front();
    queue_.pop_front();
    if (!children_.contains(peer)) continue;
    current_.emplace(peer, Probe{});
    send_probe(peer, current_->second, now);
    return;
  }
  start_fanout(now);
}

void LinkProber::send_probe(PeerId peer, Probe& probe, double now) {
  probe.sent_at = now;
  if (probe.small_done < small_probes) {
    send_(peer, ++probe.seq, small_);
    return;
  }
  for (int i = 0; i < big_probes; ++i) send_(peer, ++probe.seq, big_);
}

void LinkProber::on_ack(PeerId peer, std::uint32_t seq, double now) {
  if (seq & fanout_bit) {
    on_fanout_ack(peer, now);
    return;
  }
  if (!current_ || current_->first != peer) return;
  Probe& p = current_->second;
  if (seq != p.seq) return;  // wait for the last of the stream
  if (p.small_done < small_probes) {
    const double rtt = now - p.sent_at;
    p.overhead = p.overhead < 0 ? rtt : std::min(p.overhead, rtt);
    ++p.small_done;
    send_probe(peer, p, now);
    return;
  }
  overhead_ = overhead_ > 0 ? std::min(overhead_, p.overhead) : p.overhead;
  const double transfer = now - p.sent_at - p.overhead;
  const double bytes = static_cast<double>(big_->size()) * big_probes;
  const double bandwidth = transfer > 0 ? bytes / transfer : 0;
  report_(net::msg::Measure{children_[peer], "", net::msg::Measure::What::link_bandwidth, bandwidth});
  current_.reset();
  next(now);
}

void LinkProber::start_fanout(double now) {
  if (children_.size() < 2 || children_.size() == fanout_children_) return;
  fanout_ = Fanout{now, children_.size() * big_probes, 0, {}, false};
  fanout_children_ = children_.size();
  for (const auto& [peer, name] : children_)
    for (int i = 0; i < big_probes; ++i) send_(peer, fanout_bit | static_cast<std::uint32_t>(i), big_);
}

/// The aggregate is taken when the first child has all its probes — while every link
/// was still busy: later, only the slower links would be sending.
void LinkProber::on_fanout_ack(PeerId peer, double now) {
  if (!fanout_) return;
  ++fanout_->received;
  if (++fanout_->acks[peer] == big_probes && !fanout_->reported) {
    fanout_->reported = true;
    const double transfer = now - fanout_->sent_at - overhead_;
    const double bytes = static_cast<double>(big_->size()) * static_cast<double>(fanout_->received);
    report_(net::msg::Measure{node_, "", net::msg::Measure::What::out_bandwidth, transfer > 0 ? bytes / transfer : 0});
  }
  if (fanout_->received < fanout_->expected) return;
  fanout_.reset();
  next(now);
}

}  // namespace treefarm::node
