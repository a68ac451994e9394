#pragma once
/// @file CopyDrift.hpp
/// `treefarm bench drift --probe copy`: how steady this machine copies bytes through its
/// kernel, the path every task input takes between two processes of a tree on one
/// machine (ipc://, loopback tcp://). One thread sends `message_bytes` messages over a
/// Unix stream socket pair, another receives them into one reused buffer, for `seconds`;
/// the bytes received are sampled every `chunk` seconds. Nothing of treefarm's runtime
/// runs. A machine whose memory the hypervisor takes back as the guest frees it (virtio
/// free page reporting) hands the kernel pages that are slow to touch again for a while:
/// copies through the kernel then stall, a compute loop (the default probe) does not.

#include <atomic>
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace treefarm::bench {

/// The stalls in a series of samples (of either probe): a sample below half the median is stalled.
struct Stalls {
  std::size_t samples = 0;        ///< Samples read.
  double median = 0;              ///< Median sample (the samples' unit).
  std::size_t stalled = 0;        ///< Samples below median / 2.
  std::size_t episodes = 0;       ///< Runs of consecutive stalled samples.
  double longest_seconds = 0;     ///< The longest such run, seconds.
  double stalled_share = 0;       ///< stalled / samples.
  double lost_share = 0;          ///< Σ max(0, median − sample) / (median × samples): what the stalls cost.
};

/// The stalls of `samples` taken every `chunk` seconds (none when empty). Throws
/// std::invalid_argument for a chunk <= 0.
Stalls find_stalls(const std::vector<double>& samples, double chunk);

nlohmann::json to_json(const Stalls& stalls);

/// The quickstart's largest task input (matadd n = 512: two 512 x 512 matrices of doubles), bytes.
inline constexpr std::size_t kCopyMessageBytes = 2u * 512u * 512u * 8u;

/// Copies through a Unix stream socket pair for `seconds` (see the file comment) and
/// returns bytes/s received per `chunk` seconds: the sender pinned to `cpus[0]`, the
/// receiver to `cpus[1]` (both to `cpus[0]` with one CPU; unpinned with none), so that the
/// operating system's placement of the two does not move the figure. `stop` (may be null)
/// cuts it short. Throws std::runtime_error when the socket pair cannot be made, a thread
/// cannot be pinned, or a send/receive fails.
std::vector<double> sample_kernel_copy(double seconds, double chunk, std::size_t message_bytes, const std::vector<int>& cpus,
                                       const std::atomic<bool>* stop, bool* interrupted);

}  // namespace treefarm::bench
