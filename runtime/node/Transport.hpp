#pragma once
/// @file Transport.hpp
/// What the node driver needs from the world to talk to its parent and its children.
/// The ZeroMQ adapter (runtime/zmq) implements it over a DEALER and a ROUTER socket, the
/// SimGrid adapter (runtime/sim) over mailboxes, the unit tests with a recording fake.
/// Every call returns at once: messages are queued, never waited for.

#include <cstdint>

#include "runtime/net/Messages.hpp"
#include "runtime/node/Payload.hpp"

namespace treefarm::node {

/// A connection from a child (or a would-be child), numbered by the transport. A peer
/// the driver dropped is never delivered again under the same id.
struct PeerId {
  std::uint32_t value = 0;
  bool operator==(const PeerId&) const = default;
  auto operator<=>(const PeerId&) const = default;
};

class Transport {
 public:
  virtual ~Transport() = default;

  /// Sends to the parent (never called at the root). `payload` only with a Task/Probe.
  virtual void send_parent(const net::Message& message, const Payload& payload = {}) = 0;

  /// Sends to a child. Returns false when the peer is known to be gone (the driver then
  /// drops it).
  virtual bool send_child(PeerId peer, const net::Message& message, const Payload& payload = {}) = 0;

  /// Forget a peer: its connection is closed or ignored from now on.
  virtual void drop_child(PeerId peer) = 0;

  /// After the parent was lost, before a new Hello: closes every connection — the
  /// children's too, so that they notice and rejoin this node — and opens a new one to
  /// the parent.
  virtual void restart() = 0;

  /// Tree repair: as restart(), but the new connection goes to `target` (the lost
  /// parent or one of its ancestors, as Welcome::ancestors announced it; under CURVE the
  /// server must prove it holds `target.public_key`). A transport that cannot reach
  /// other nodes (a simulation, where nothing fails) restarts toward its parent.
  virtual void restart_to(const net::msg::Ancestor& target) {
    (void)target;
    restart();
  }

  /// True if the transport itself reports when a task transfer to a child ended
  /// (NodeDriver::on_transfer_done; a simulation knows). Otherwise the driver relies on
  /// the child's msg::Received acknowledgement, and every node acknowledges the tasks it
  /// receives.
  virtual bool reports_transfers() const { return false; }

  /// True if transfers to one child run at the same time and share the link (SimGrid's
  /// concurrent comms); false if they queue one behind the other on the child's
  /// connection (TCP). NodeDriver then learns a link only from transfers that had it to
  /// themselves throughout, not only at their start (NodeDriver::transfer_done).
  virtual bool transfers_share_link() const { return false; }

  /// bytes: what the send_child of task `task_id` just made put on the child's connection
  /// for its input of `payload_bytes` — all of it, unless the transport moved the input
  /// another way (ZmqNode: an input written into the child's shared segment leaves a
  /// reference of net::shared_reference_bytes on the socket). The one-port window counts
  /// these bytes (SendLedger), as it bounds what waits on the connection.
  virtual std::uint64_t connection_bytes(PeerId peer, std::uint64_t task_id, std::uint64_t payload_bytes) const {
    (void)peer;
    (void)task_id;
    return payload_bytes;
  }

  /// A payload of `bytes` bytes for link probes (zeros; a simulation needs only the size).
  virtual Payload probe_payload(std::size_t bytes) {
    return share(std::make_shared<const std::vector<std::byte>>(bytes));
  }
};

}  // namespace treefarm::node
