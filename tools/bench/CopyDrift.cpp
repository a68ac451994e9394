#include "tools/bench/CopyDrift.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "tools/bench/ExecutorBenchSupport.hpp"

namespace treefarm::bench {

Stalls find_stalls(const std::vector<double>& samples, double chunk) {
  if (!(chunk > 0)) throw std::invalid_argument("bench drift: the sampling interval must be > 0");
  Stalls s;
  s.samples = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  std::size_t run = 0, longest = 0;
  double lost = 0;
  for (const double x : samples) {
    lost += std::max(0.0, s.median - x);
    if (x < s.median / 2) {
      ++s.stalled;
      if (run++ == 0) ++s.episodes;
      longest = std::max(longest, run);
    } else {
      run = 0;
    }
  }
  s.longest_seconds = static_cast<double>(longest) * chunk;
  s.stalled_share = static_cast<double>(s.stalled) / static_cast<double>(n);
  s.lost_share = s.median > 0 ? lost / (s.median * static_cast<double>(n)) : 0.0;
  return s;
}

nlohmann::json to_json(const Stalls& s) {
  return {{"samples", s.samples},
          {"median", s.median},
          {"stalled_samples", s.stalled},
          {"episodes", s.episodes},
          {"longest_seconds", s.longest_seconds},
          {"stalled_share", s.stalled_share},
          {"lost_share", s.lost_share}};
}

namespace {

/// Both ends of a Unix stream socket pair, closed when it goes.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) != 0)
      throw std::runtime_error(std::string("bench drift: socketpair: ") + std::strerror(errno));
  }
  ~SocketPair() {
    for (const int f : fd)
      if (f >= 0) ::close(f);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
};

}  // namespace

std::vector<double> sample_kernel_copy(double seconds, double chunk, std::size_t message_bytes, const std::vector<int>& cpus,
                                       const std::atomic<bool>* stop, bool* interrupted) {
  if (!(seconds > 0) || !(chunk > 0) || message_bytes == 0)
    throw std::invalid_argument("bench drift: --seconds, --chunk and the message size must be > 0");
  SocketPair pair;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> received{0};
  std::atomic<int> failed{0};  // errno of the first failure, 0: none
  std::atomic<int> unpinned{0};
  const auto pin = [&](std::size_t i) {
    if (!cpus.empty() && !exec_bench::pin_this_thread(cpus[std::min(i, cpus.size() - 1)])) unpinned.fetch_add(1);
  };
  std::thread sender([&] {
    pin(0);
    // The message's bytes are written once: what is measured is the copy through the
    // kernel (into its socket buffers, then out of them), as a task input takes it.
    const std::vector<char> message(message_bytes, 'x');
    while (!done.load(std::memory_order_relaxed)) {
      std::size_t sent = 0;
      while (sent < message_bytes) {
        const ssize_t r = ::send(pair.fd[0], message.data() + sent, message_bytes - sent, MSG_NOSIGNAL);
        if (r > 0) {
          sent += static_cast<std::size_t>(r);
        } else if (r < 0 && errno == EINTR) {
          continue;
        } else {
          if (!done.load()) failed.store(r < 0 ? errno : EPIPE);
          return;
        }
      }
    }
  });
  std::thread receiver([&] {
    pin(1);
    std::vector<char> buffer(1u << 20);
    for (;;) {
      const ssize_t r = ::recv(pair.fd[1], buffer.data(), buffer.size(), 0);
      if (r > 0) {
        received.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
      } else if (r < 0 && errno == EINTR) {
        continue;
      } else {
        if (!done.load() && r < 0) failed.store(errno);
        return;
      }
    }
  });
  using Clock = std::chrono::steady_clock;
  std::vector<double> samples;  // bytes/s
  const auto start = Clock::now();
  auto last_time = start;
  std::uint64_t last = received.load();
  const auto chunks = static_cast<std::size_t>(std::max(1.0, seconds / chunk));
  for (std::size_t k = 1; k <= chunks && failed.load() == 0; ++k) {
    if (stop && stop->load()) {
      if (interrupted) *interrupted = true;
      break;
    }
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(chunk * static_cast<double>(k))));
    const auto now = Clock::now();
    const std::uint64_t count = received.load();
    samples.push_back(static_cast<double>(count - last) / std::chrono::duration<double>(now - last_time).count());
    last = count;
    last_time = now;
  }
  done = true;
  ::shutdown(pair.fd[0], SHUT_RDWR);  // wakes a sender blocked on a full socket and ends the receiver
  ::shutdown(pair.fd[1], SHUT_RDWR);
  sender.join();
  receiver.join();
  if (unpinned.load() > 0) throw std::runtime_error("bench drift: could not pin a copying thread to its CPU");
  if (const int e = failed.load())
    throw std::runtime_error(std::string("bench drift: copying through the socket pair failed: ") + std::strerror(e));
  return samples;
}

}  // namespace treefarm::bench
