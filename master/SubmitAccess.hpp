#pragma once
/// @file SubmitAccess.hpp
/// Who may do what on a served master's submit channel (docs/security.md, "Roles" and "No
/// programs for strangers"). Under CURVE the channel admits client and admin keys only (a
/// ZAP handler of its own: a node key joins the tree, it does not submit); on an ipc://
/// channel (socket file mode 0600) only the master's own user and root; on TCP without
/// CURVE anyone who reaches the loopback address, authenticated as nobody.

#include <cstdint>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "master/Server.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/zmq/Curve.hpp"

namespace treefarm::master {

/// Who sent a request on the submit channel.
struct Peer {
  /// Who owns what it submits, and may cancel it: "key NAME" under CURVE, "uid N" on an
  /// ipc:// channel, "connection HEX" (this connection only) on TCP without CURVE.
  std::string owner;
  bool trusted = false;  ///< authenticated: may submit command applications if the master allows them
  bool admin = false;    ///< may cancel anyone's experiment (an admin key; root on ipc://)
};

class SubmitAccess {
 public:
  /// Sets up `socket` (not yet bound) in `context` for `options`: CURVE with a ZAP handler
  /// admitting client and admin keys, never the master's own. Throws std::invalid_argument
  /// for an unencrypted channel on a non-loopback address without --insecure.
  SubmitAccess(zmq::context_t& context, zmq::socket_t& socket, const ServeOptions& options);
  ~SubmitAccess();
  /// Once bound to `endpoint`: an ipc:// socket file is made mode 0600 (throws if it cannot be).
  void bound(const std::string& endpoint);
  /// Who sent the request `head` (a frame received from `client`, the routing identity).
  /// Throws std::invalid_argument, refusing the request, for a key no longer a client or
  /// admin (authorized_keys changed since it connected) or an ipc:// peer of another user.
  Peer peer(const std::string& client, zmq::message_t& head) const;
  /// Throws std::invalid_argument naming `file`, the line and field of the first command
  /// application of `experiment` unless the master allows commands and `from` is trusted.
  void check_commands(const model::Experiment& experiment, const Peer& from, const std::string& file) const;
  /// Throws std::invalid_argument unless `from` may cancel experiment `id` of `owner`.
  void check_cancel(const Peer& from, const std::string& owner, std::uint64_t id) const;

 private:
  const ServeOptions& options_;
  std::unique_ptr<net::ZapHandler> zap_;
  std::string endpoint_;
};

}  // namespace treefarm::master
