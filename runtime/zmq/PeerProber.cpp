#include "runtime/zmq/PeerProber.hpp"

#include <algorithm>
#include <exception>

#include <spdlog/spdlog.h>

#include "runtime/zmq/TreeQueryClient.hpp"

namespace treefarm::zmq_node {

PeerProber::PeerProber(std::string name, std::uint32_t cores, net::CurveConfig curve, SpeedProbe speed)
    : name_(std::move(name)), cores_(cores), curve_(std::move(curve)), speed_(std::move(speed)) {
  thread_ = std::thread([this] { run(); });
}

PeerProber::~PeerProber() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PeerProber::submit(std::string identity, net::msg::ProbeRequest request) {
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(std::move(identity), std::move(request));
  }
  wake_.notify_all();
}

std::vector<std::pair<std::string, net::msg::ProbeReport>> PeerProber::take_done() {
  std::lock_guard lock(mutex_);
  return std::exchange(done_, {});
}

bool PeerProber::busy() const {
  std::lock_guard lock(mutex_);
  return !queue_.empty() || running_ > 0 || !done_.empty();
}

void PeerProber::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto [identity, request] = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    auto report = measure(request);
    lock.lock();
    --running_;
    done_.emplace_back(std::move(identity), std::move(report));
  }
}

net::msg::ProbeReport PeerProber::measure(const net::msg::ProbeRequest& request) const {
  net::msg::ProbeReport r;
  r.node = name_;
  r.target = request.target;
  r.cores = cores_;
  try {
    if (request.target.empty()) {
      if (!speed_) throw std::runtime_error("this node cannot measure its speed");
      r.speed = speed_();
      r.ok = r.speed > 0;
      if (!r.ok) r.error = "the speed measurement gave no figure";
      return r;
    }
    TreeQueryClient client;
    if (curve_.enabled) {
      if (request.target_key.empty())
        throw std::runtime_error("this node uses CURVE: the request must give the target's public key");
      client.set_curve(curve_.own);
      client.server_key(request.target, request.target_key);
    }
    double round_trip = 1e300, fastest = 1e300;
    const auto unanswered = [&] {
      return "no answer from " + request.target + " within " + std::to_string(request.timeout) + " s" +
             (curve_.enabled ? " (under CURVE: is this node's key in its authorized_keys, and the target key right?)" : "");
    };
    for (std::uint32_t i = 0; i < request.rounds; ++i) {
      auto a = client.ask(request.target, 0, request.timeout);
      if (!a) throw std::runtime_error(unanswered());
      round_trip = std::min(round_trip, a->seconds);
      r.target_name = a->info.name;
    }
    r.round_trip = round_trip;
    if (request.bytes > 0) {
      for (std::uint32_t i = 0; i < request.rounds; ++i) {
        auto a = client.ask(request.target, request.bytes, request.timeout);
        if (!a) throw std::runtime_error(unanswered());
        fastest = std::min(fastest, a->seconds);
      }
      // A probe that came back faster than the smallest empty round trip (noise on a fast
      // link): bytes over its whole time, a lower bound, rather than an absurd figure.
      const double transfer = fastest - round_trip;
      r.bandwidth = static_cast<double>(request.bytes) / (transfer > 0 ? transfer : fastest);
    }
    r.ok = true;
  } catch (const std::exception& e) {
    r.ok = false;
    r.error = e.what();
    spdlog::warn("{}: probe of {} failed: {}", name_, request.target.empty() ? "the speed" : request.target, r.error);
  }
  return r;
}

}  // namespace treefarm::zmq_node
