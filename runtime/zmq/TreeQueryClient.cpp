#include "runtime/zmq/TreeQueryClient.hpp"

#include <algorithm>
#include <chrono>

#include "runtime/zmq/Wire.hpp"

namespace treefarm::zmq_node {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

TreeQueryClient::TreeQueryClient() : ctx_(1) {}
TreeQueryClient::~TreeQueryClient() {
  sockets_.clear();
  ctx_.close();
}

std::optional<TreeQueryClient::Answer> TreeQueryClient::ask(const std::string& endpoint, std::uint64_t probe_bytes,
                                                            double timeout) {
  if (cancelled()) return std::nullopt;
  auto& slot = sockets_[endpoint];
  if (!slot) {
    net::CurveConfig curve;
    if (own_) {
      const auto key = server_keys_.find(endpoint);
      if (key == server_keys_.end() || key->second.empty()) {
        sockets_.erase(endpoint);
        return std::nullopt;  // CURVE without the node's key: it cannot be asked
      }
      curve.enabled = true;
      curve.own = *own_;
      curve.parent_public_key = key->second;
    }
    slot = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::dealer);
    net::configure_socket(*slot, false);
    slot->set(zmq::sockopt::linger, 0);
    net::apply_curve_client(*slot, curve);
    slot->connect(endpoint);
  }
  auto& socket = *slot;
  const auto t0 = Clock::now();
  if (!net::send(socket, net::msg::TreeQuery{probe_bytes})) {
    sockets_.erase(endpoint);
    return std::nullopt;
  }
  while (true) {
    const double left = timeout - since(t0);
    if (left <= 0 || cancelled()) break;
    zmq_pollitem_t item{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0};
    const double slice = cancel_ ? std::min(left, 0.1) : left;  // seconds
    zmq::poll(&item, 1, std::chrono::milliseconds(std::max<long>(1, static_cast<long>(slice * 1000))));
    if (!(item.revents & ZMQ_POLLIN)) continue;
    auto got = net::try_receive(socket, false);
    if (!got) continue;
    auto* r = std::get_if<net::Received>(&*got);
    if (!r) break;  // undecodable
    auto* info = std::get_if<net::msg::TreeInfo>(&r->message);
    if (!info) continue;  // e.g. a Heartbeat: not ours
    Answer a;
    a.seconds = since(t0);
    a.info = std::move(*info);
    a.probe_bytes = r->payload ? r->payload->size() : 0;
    if (a.probe_bytes != probe_bytes) break;
    return a;
  }
  sockets_.erase(endpoint);
  return std::nullopt;
}

std::optional<double> TreeQueryClient::bandwidth(const std::string& endpoint, std::uint64_t probe_bytes, int repeats,
                                                 double timeout) {
  double overhead = 1e9, big = 1e9;
  for (int i = 0; i < 3; ++i) {
    auto a = ask(endpoint, 0, timeout);
    if (!a) return std::nullopt;
    overhead = std::min(overhead, a->seconds);
  }
  for (int i = 0; i < std::max(repeats, 1); ++i) {
    auto a = ask(endpoint, probe_bytes, timeout);
    if (!a) return std::nullopt;
    big = std::min(big, a->seconds);
  }
  // A probe faster than the overhead resolves: 1 µs of transfer (a bound, not a figure).
  return static_cast<double>(probe_bytes) / std::max(big - overhead, 1e-6);
}

}  // namespace treefarm::zmq_node
