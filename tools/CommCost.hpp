#pragma once
/// @file CommCost.hpp
/// The CPU cost of moving bytes between two processes of one machine over the tree's
/// transport (ZeroMQ over loopback TCP, CURVE when the tree is encrypted): what the
/// host-aware LP charges per byte a node sends or receives (docs/lp.md "Hosts").

#include <cstdint>
#include <vector>

namespace treefarm::tools {

/// A measured CPU cost of communication.
struct CommCost {
  double cpu_seconds_per_byte = 0;  ///< CPU seconds (sender + receiver + I/O threads) per byte moved, median.
  double spread = 0;                ///< range of the middle half of the repetitions / median (summarize_comm_reps).
  double bytes_per_second = 0;      ///< Wall-clock rate of the median repetition, bytes/s.
  int repetitions = 0;
};

/// One repetition: CPU seconds per byte moved, and its wall-clock rate in bytes/s.
struct CommRep {
  double cpu_seconds_per_byte = 0;
  double bytes_per_second = 0;
};

/// The repetitions' median CPU cost per byte (the upper middle one of an even count), its
/// rate, and the range of their middle half over the median (sorted, the n/4-th from each
/// end; the whole range under four). Throws std::invalid_argument if `reps` is empty.
CommCost summarize_comm_reps(const std::vector<CommRep>& reps);

/// measure_comm_cost's repetitions, each as measured.
std::vector<CommRep> measure_comm_reps(std::uint64_t message_bytes, bool curve, int repetitions, double seconds_per_rep);

/// Streams `message_bytes`-byte messages (zero-copy, as the runtime sends payloads) from
/// one ZeroMQ socket to another over tcp://127.0.0.1 for about `seconds_per_rep` seconds,
/// `repetitions` times, and divides the process CPU time spent (CLOCK_PROCESS_CPUTIME_ID:
/// both ends and their I/O threads) by the bytes received. `curve`: CURVE-encrypted.
/// Throws std::runtime_error if ZeroMQ fails.
CommCost measure_comm_cost(std::uint64_t message_bytes, bool curve, int repetitions = 5,
                           double seconds_per_rep = 0.2);

/// The cost of a byte sampled at several moments of a calibration, a repetition or a few at
/// a time between its phases, and summarised over them all. Why: on a shared VM, copies
/// through the kernel run 2-3x slower in episodes that last from a fraction of a second to
/// several seconds (`treefarm bench drift --probe copy`). Five repetitions taken in one
/// second fall into the same episode together, and the LP then charges every forwarded
/// byte at the episode's cost: measured 0.60-0.71 CPU-ns per byte in 3 of 6 calibrations
/// against 0.27-0.30 outside them, which predicted the quickstart 9-23 % low. Spread
/// over the calibration's ~20 s, the median takes the level most of the samples saw.
class CommCostSeries {
 public:
  CommCostSeries(std::uint64_t message_bytes, bool curve, double seconds_per_rep = 0.2)
      : message_bytes_(message_bytes), curve_(curve), seconds_per_rep_(seconds_per_rep) {}
  /// Measures `repetitions` more (measure_comm_reps); throws as it does.
  void sample(int repetitions = 1);
  /// Adds repetitions measured elsewhere (tests).
  void add(const CommRep& rep) { reps_.push_back(rep); }
  /// summarize_comm_reps over every repetition so far; throws if there is none.
  CommCost summary() const { return summarize_comm_reps(reps_); }
  std::size_t size() const { return reps_.size(); }

 private:
  std::uint64_t message_bytes_;
  bool curve_;
  double seconds_per_rep_;
  std::vector<CommRep> reps_;
};

}  // namespace treefarm::tools
