#pragma once
/// @file TreeQueryClient.hpp
/// Asking nodes of a live tree about themselves from outside it (msg::TreeQuery →
/// msg::TreeInfo, docs/protocol.md), with an optional link probe: the answer carries
/// `probe_bytes` bytes, so the time to get it measures the link from that node to here.
/// Used by `treefarm-worker --parent auto` (docs/planning.md). One DEALER per node,
/// kept open between questions; under CURVE (set_curve) each node's listener must prove the
/// public key given for its endpoint, and this client's key must be in its authorized_keys.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "runtime/net/Messages.hpp"
#include "runtime/zmq/Curve.hpp"

namespace treefarm::zmq_node {

class TreeQueryClient {
 public:
  struct Answer {
    net::msg::TreeInfo info;
    double seconds = 0;            ///< from sending the question to the whole answer
    std::size_t probe_bytes = 0;   ///< bytes of the answer's payload
  };

  TreeQueryClient();
  ~TreeQueryClient();
  TreeQueryClient(const TreeQueryClient&) = delete;
  TreeQueryClient& operator=(const TreeQueryClient&) = delete;

  /// Asks the node listening at `endpoint`; nullopt when it does not answer within
  /// `timeout` seconds or answers something else (the connection is then closed, so a
  /// late answer cannot be taken for the next one).
  std::optional<Answer> ask(const std::string& endpoint, std::uint64_t probe_bytes, double timeout);

  /// Bandwidth from the node at `endpoint` to here, bytes/s: the smallest round trip of
  /// 3 empty questions is the overhead, the fastest of `repeats` questions answered with
  /// `probe_bytes` bytes gives bytes / (time − overhead). nullopt if it stops answering.
  std::optional<double> bandwidth(const std::string& endpoint, std::uint64_t probe_bytes, int repeats, double timeout);

  /// CURVE from now on: questions go encrypted with `own`'s keys; an endpoint is asked
  /// only once its server key is known (server_key), else ask() returns nullopt.
  void set_curve(net::KeyPair own) { own_ = std::move(own); }
  /// The Z85 public key of the listener at `endpoint` (CURVE only).
  void server_key(const std::string& endpoint, const std::string& key) { server_keys_[endpoint] = key; }
  bool curve() const { return own_.has_value(); }
  /// From now on ask() gives up (nullopt) within 0.1 s of `*flag` becoming true, and asks
  /// nothing while it is: a worker that ends does not wait for questions to nodes that
  /// ended with it. nullptr: never.
  void cancel_when(const std::atomic<bool>* flag) { cancel_ = flag; }

 private:
  bool cancelled() const { return cancel_ && cancel_->load(); }
  zmq::context_t ctx_;
  const std::atomic<bool>* cancel_ = nullptr;
  std::optional<net::KeyPair> own_;
  std::map<std::string, std::string> server_keys_;
  std::map<std::string, std::unique_ptr<zmq::socket_t>> sockets_;
};

}  // namespace treefarm::zmq_node
