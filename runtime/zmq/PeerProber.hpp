#pragma once
/// @file PeerProber.hpp
/// A node measuring, on request, the link from another node to itself or the speed of
/// its own cores (msg::ProbeRequest → msg::ProbeReport, docs/protocol.md), for
/// `treefarm probe` (docs/machines-file.md). The measurements run on a thread of their
/// own, one request at a time, so that the node's loop keeps serving its tree; the loop
/// hands requests in (submit) and sends the reports that are done (take_done).
///
/// Link: `rounds` empty TreeQuery round trips to the target (the smallest is the round
/// trip, seconds), then `rounds` TreeQuery answered with `bytes` bytes; bandwidth =
/// bytes / (fastest − smallest round trip), bytes/s, from the target to this node (bytes /
/// fastest when the difference is not positive: a lower bound).
/// Speed: the node's speed function (flop/s per core; none: refused).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/net/Messages.hpp"
#include "runtime/zmq/Curve.hpp"

namespace treefarm::zmq_node {

class PeerProber {
 public:
  /// flop/s per core of this machine, measured when called (may take a second).
  using SpeedProbe = std::function<double()>;

  /// `curve`: when enabled, the links are measured over CURVE with this node's own keys
  /// (its public key must be in the target's authorized_keys) and the request must name
  /// the target's public key.
  PeerProber(std::string name, std::uint32_t cores, net::CurveConfig curve, SpeedProbe speed);
  ~PeerProber();
  PeerProber(const PeerProber&) = delete;
  PeerProber& operator=(const PeerProber&) = delete;

  /// Queues a request from the peer with routing identity `identity`.
  void submit(std::string identity, net::msg::ProbeRequest request);
  /// The reports done since the last call, with the identity to send each to.
  std::vector<std::pair<std::string, net::msg::ProbeReport>> take_done();
  /// True while a request is queued or running (the loop then polls more often).
  bool busy() const;

  /// Measures one request on the calling thread (what the prober's thread runs).
  net::msg::ProbeReport measure(const net::msg::ProbeRequest& request) const;

 private:
  void run();

  std::string name_;
  std::uint32_t cores_;
  net::CurveConfig curve_;
  SpeedProbe speed_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<std::string, net::msg::ProbeRequest>> queue_;
  std::vector<std::pair<std::string, net::msg::ProbeReport>> done_;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace treefarm::zmq_node
