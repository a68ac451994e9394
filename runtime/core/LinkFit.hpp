#pragma once
/// @file LinkFit.hpp
/// What a link's task transfers say about its bandwidth (docs/live-model.md, "Online
/// estimates"; docs/policies.md, the bandwidth-centric policies). A transfer of b bytes takes latency + b / bandwidth seconds
/// (papers/beaumont2006 §2 charges b / bandwidth; the latency is the runtime's round trip
/// to the acknowledgement), so b / seconds of a small transfer is its latency, not the
/// link's bandwidth: 4 KiB acknowledged after 100 µs "is" 41 MB/s on a link that carries
/// GB/s. LinkFit fits seconds = latency + bytes / bandwidth over the link's transfers
/// (least squares) and turns a transfer into a bandwidth sample, bytes / (seconds −
/// latency), only when its time is mostly bytes: the bandwidth estimate (a RunningEstimate
/// with its spread and shift test) then hears from transfers that measure the bandwidth
/// and from no other. Pure arithmetic: the node driver's estimates (node::Estimates) and
/// the scheduler's link bandwidths (NodeScheduler, TransferObserved) share it.

#include <cstdint>
#include <optional>

namespace treefarm::core {

/// bytes: the largest task transfer the one-port window lets free the port at once (a
/// matmul or matadd input of order 64); a larger one holds the port until acknowledged.
/// model::one_port_small_transfer, which the core cannot include (checked equal there).
constexpr std::uint64_t one_port_small_transfer = 64 * 1024;

class LinkFit {
 public:
  /// Transfers whose sizes span less than this factor leave the latency unknown.
  static constexpr double min_span = 4.0;
  /// While the latency is unknown, only transfers larger than this (bytes) are samples:
  /// the largest transfer that frees the one-port at once (one_port_small_transfer);
  /// smaller ones pipeline behind each other within one round trip.
  static constexpr double small_bytes = static_cast<double>(one_port_small_transfer);

  /// A transfer of `bytes` that had the link to itself took `seconds`. The bandwidth sample
  /// it gives (bytes/s), or none: its time is mostly latency (more than half of it), or its
  /// figures are not positive and finite.
  std::optional<double> add(double bytes, double seconds);

  /// The fitted latency (seconds, >= 0) once at least 3 transfers of sizes spanning
  /// min_span were seen and the larger took longer; none before.
  std::optional<double> latency() const;

  std::uint64_t transfers() const { return n_; }

 private:
  std::uint64_t n_ = 0;
  double mean_bytes_ = 0, mean_seconds_ = 0;
  double m2_bytes_ = 0;   ///< Σ (bytes − mean)²
  double c_ = 0;          ///< Σ (bytes − mean)(seconds − mean)
  double min_bytes_ = 0, max_bytes_ = 0;
};

}  // namespace treefarm::core
