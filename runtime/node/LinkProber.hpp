#pragma once
/// @file LinkProber.hpp
/// The calibration's link measurements, made by every parent (docs/calibration.md):
/// for each child in turn, small ping-pongs give the round-trip overhead, then
/// `big_probes` payload-sized probes are streamed back to back (as tasks are) and the
/// link's bandwidth = their bytes / (time to the last acknowledgement − overhead). One
/// child at a time: concurrent probes would share this node's output and each measure a
/// fraction of its link. Then, with two or more children, all of them at once: the
/// node's aggregate output, the cap of the bounded multi-port model (bertin2008 §2.1).
/// Pure: sends through a callback, time passed in.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "runtime/net/Messages.hpp"
#include "runtime/node/Payload.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::node {

class LinkProber {
 public:
  static constexpr int small_probes = 3;
  static constexpr int big_probes = 8;
  /// Sequence numbers of the aggregate (fan-out) probes have this bit set.
  static constexpr std::uint32_t fanout_bit = 0x80000000u;

  using Send = std::function<void(PeerId, std::uint32_t seq, const Payload&)>;
  using Report = std::function<void(const net::msg::Measure&)>;

  /// `small` and `big`: the probe payloads (1 byte; the largest task input, >= 1 MiB).
  LinkProber(std::string node, Payload small, Payload big, Send send, Report report);

  void child_joined(PeerId peer, const std::string& name, double now);
  void child_left(PeerId peer, double now);
  void on_ack(PeerId peer, std::uint32_t seq, double now);

 private:
  struct Probe {
    std::uint32_t seq = 0;
    double sent_at = 0;
    int small_done = 0;
    double overhead = -1;  ///< seconds, smallest round trip
  };
  struct Fanout {
    double sent_at = 0;
    std::size_t expected = 0, received = 0;
    std::map<PeerId, int> acks;
    bool reported = false;
  };

  void next(double now);
  void send_probe(PeerId peer, Probe& probe, double now);
  void start_fanout(double now);
  void on_fanout_ack(PeerId peer, double now);

  std::string node_;
  Payload small_, big_;
  Send send_;
  Report report_;
  std::map<PeerId, std::string> children_;
  std::deque<PeerId> queue_;
  std::optional<std::pair<PeerId, Probe>> current_;
  std::optional<Fanout> fanout_;
  std::size_t fanout_children_ = 0;  ///< children covered by the last fan-out
  double overhead_ = 0;              ///< seconds, smallest round trip seen on any link
};

}  // namespace treefarm::node
