#pragma once
/// @file LinkProber.hpp
/// The calibration's link measurements, made by every parent (docs/calibration.md).
/// A *round* on one child: `small_probes` 1-byte ping-pongs give the round trip (the
/// smallest of them, seconds), then `big_probes` payload-sized probes are streamed back
/// to back (as tasks are) and the link's bandwidth = their bytes / (time to the last
/// acknowledgement − that round trip). Every link gets `rounds` rounds, taken in turn
/// over the children (round r of every child, then round r+1) so that they sample
/// different moments of a busy machine; the report is the median bandwidth, the smallest
/// and largest rounds (the spread the prediction interval comes from) and the median
/// round trip. One child at a time: concurrent probes would share this node's
/// output and each measure a fraction of its link. Then, with two or more children,
/// `rounds` rounds of all of them at once: the node's aggregate output, the cap of the
/// bounded multi-port model (bertin2008 §2.1), reported as their median.
/// Pure: sends through a callback, time passed in.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/net/Messages.hpp"
#include "runtime/node/Payload.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::node {

/// Median, smallest and largest of a set of bandwidth samples (bytes/s); a sample of 0
/// ("too fast to resolve") counts as infinitely fast, and an infinite result is
/// reported as 0, the wire's "too fast to resolve".
struct BandwidthSummary {
  double median = 0, min = 0, max = 0;  ///< bytes/s (0 = too fast to resolve)
};
BandwidthSummary summarize_bandwidths(std::vector<double> samples);

class LinkProber {
 public:
  static constexpr int small_probes = 3;
  static constexpr int big_probes = 8;
  /// Rounds per link (and per fan-out): the median of five keeps one descheduled round
  /// on a loaded machine out of the figure.
  static constexpr int rounds = 5;
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
  /// What has been measured on the link to one child.
  struct Link {
    std::string name;
    std::vector<double> bandwidths;   ///< bytes/s, one per finished round (0 = unresolved)
    std::vector<double> round_trips;  ///< seconds, smallest ping-pong of each round
  };
  /// The round under way on one child.
  struct Round {
    PeerId peer{};
    std::uint32_t seq = 0;
    double sent_at = 0;
    int small_done = 0;
    double overhead = -1;  ///< seconds, smallest round trip of this round
  };
  struct Fanout {
    double sent_at = 0;
    std::size_t expected = 0, received = 0;
    std::map<PeerId, std::vector<double>> acks;  ///< per child, when each probe was acknowledged
    double first_done = -1;  ///< when the first child had all its probes (-1: not yet)
  };

  void next(double now);
  void send_probe(Round& round, double now);
  void finish_round(Round& round, double now);
  void start_fanout(double now);
  void on_fanout_ack(PeerId peer, double now);

  std::string node_;
  Payload small_, big_;
  Send send_;
  Report report_;
  std::map<PeerId, Link> children_;
  std::deque<PeerId> queue_;
  std::optional<Round> current_;
  std::optional<Fanout> fanout_;
  std::vector<double> fanout_samples_;  ///< bytes/s, rounds of the fan-out under way
  std::size_t fanout_samples_children_ = 0;  ///< children those rounds covered
  std::size_t fanout_children_ = 0;     ///< children covered by the last reported fan-out
  double overhead_ = 0;                 ///< seconds, smallest round trip seen on any link
};

}  // namespace treefarm::node
