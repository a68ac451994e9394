#pragma once
/// @file SendLedger.hpp
/// Task transfers to the children not yet acknowledged, and the one-port window over them
/// (papers/beaumont2006 §2: a send occupies the node's port for its size / bandwidth).
/// Each child keeps its own Records; the ledger keeps what spans them (transfers in flight,
/// bytes of released transfers) and decides, per transfer, whether it frees the port at
/// once (small, within NodeOptions::one_port_window) and whether it had the link to itself
/// (only those teach the policies the link: beaumont2006 §5.1.4).

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/model/Experiment.hpp"
#include "runtime/node/TaskMap.hpp"

namespace treefarm::node {

struct SendRecord {
  double sent_at = 0;     ///< seconds
  double bytes = 0;                ///< the task's input
  std::uint64_t on_connection = 0;  ///< bytes of it on the child's connection (Transport::connection_bytes)
  bool alone = true;      ///< no other transfer to the same child in flight at its start (and, sharing transports, during it)
  bool released = false;  ///< freed the port when sent (NodeOptions::one_port_window)
};

class SendLedger {
 public:
  /// One child's transfers not yet acknowledged, by task id.
  using Records = IdMap<SendRecord>;

  /// The run's rules: one-port or not; whether the transport reports transfers itself and
  /// whether transfers to a child share its link (Transport); the window, bytes.
  void configure(bool one_port, bool reports_transfers, bool share_link, std::uint64_t window) {
    one_port_ = one_port;
    reports_transfers_ = reports_transfers;
    share_link_ = share_link;
    window_ = window;
  }

  /// A transfer of task `task_id` (an input of `bytes`, of which `on_connection` went on
  /// the child's connection: Transport::connection_bytes) to the child of `mine` starts at
  /// `now`. `each_child(f)` calls f(Records&) for every child (this one included). Returns
  /// true if the transfer frees the port at once.
  template <class EachChild>
  bool begin(Records& mine, std::uint64_t task_id, std::uint64_t bytes, std::uint64_t on_connection, double now,
             EachChild&& each_child) {
    // A small transfer (model::one_port_release_limit) pipelines behind the others on the
    // connection: the port is free again at once, within the window of unacknowledged bytes
    // on the connection (an input the transport moved aside, in a shared segment, leaves
    // only its reference there).
    const bool release = one_port_ && !reports_transfers_ && bytes <= model::one_port_release_limit(window_) &&
                         released_bytes_ + on_connection <= window_;
    // Transfers that share the link (Transport::transfers_share_link) are observed only if
    // they had it to themselves throughout: a later one slows those already in flight.
    // Under one-port, concurrent sends to different children ("pbc") share the node's
    // port in time (the SimGrid adapter, beaumont2006 §4.4), so any other send counts.
    bool alone = mine.empty();
    if (share_link_) {
      for (auto& [id, other] : mine) other.alone = false;
      if (one_port_ && in_flight_ > mine.size())
        each_child([&](Records& records) {
          for (auto& [id, other] : records) {
            other.alone = false;
            alone = false;
          }
        });
    }
    if (mine.insert_or_assign(task_id, SendRecord{now, static_cast<double>(bytes), on_connection, alone, release}).second)
      ++in_flight_;
    if (release) released_bytes_ += on_connection;
    return release;
  }

  /// The transfer of `task_id` ended (acknowledged, or reported by the transport); nullopt
  /// if it is not in `mine` (a duplicate or late acknowledgement).
  std::optional<SendRecord> end(Records& mine, std::uint64_t task_id) {
    auto it = mine.find(task_id);
    if (it == mine.end()) return std::nullopt;
    const SendRecord s = it->second;
    mine.erase(it);
    --in_flight_;
    if (s.released) released_bytes_ -= s.on_connection;
    return s;
  }

  /// The child of `mine` is gone: its transfers are over. Returns how many of them held
  /// the port (each frees it: core::event::SendDone).
  std::size_t forget(Records& mine) {
    std::size_t held = 0;
    for (const auto& [task_id, s] : mine) {
      if (s.released) released_bytes_ -= s.on_connection;
      else ++held;
    }
    in_flight_ -= mine.size();
    mine.clear();
    return held;
  }

  /// Why the child of `mine` is late to acknowledge at `now` (nullopt if it is not): past
  /// `ack_timeout` seconds plus four times the expected time of what it has not
  /// acknowledged at `bandwidth` bytes/s (0: unknown).
  static std::optional<std::string> late(const Records& mine, double now, double bandwidth, double ack_timeout) {
    if (mine.empty()) return std::nullopt;
    double oldest = now, bytes = 0;
    for (const auto& [id, s] : mine) {
      oldest = oldest < s.sent_at ? oldest : s.sent_at;
      bytes += s.bytes;
    }
    const double limit = ack_timeout + (bandwidth > 0 ? 4 * bytes / bandwidth : 0.0);
    if (now - oldest > limit)
      return "did not acknowledge a task transfer within " + std::to_string(static_cast<long>(limit)) + " s";
    return std::nullopt;
  }

  bool one_port() const { return one_port_; }
  /// Forgets every transfer (the node lost its parent; its children are gone).
  void clear() {
    in_flight_ = 0;
    released_bytes_ = 0;
  }

 private:
  bool one_port_ = true;
  bool reports_transfers_ = false;
  bool share_link_ = false;
  std::uint64_t window_ = 0;
  std::size_t in_flight_ = 0;           ///< transfers to all children, not yet acknowledged
  std::uint64_t released_bytes_ = 0;    ///< bytes of released transfers not yet acknowledged
};

}  // namespace treefarm::node
