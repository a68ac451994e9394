#pragma once
/// @file Wire.hpp
/// Sending and receiving protocol messages on ZeroMQ sockets: DEALER to the parent,
/// ROUTER for the children. A message is [identity (ROUTER only)] + header frame +
/// payload frames; payloads travel without copying.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "runtime/net/Batch.hpp"
#include "runtime/net/Codec.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::net {

/// One received message.
struct Received {
  std::string identity;               ///< ROUTER: the peer's routing id; DEALER: empty.
  Message message;
  std::optional<zmq::message_t> payload;
  /// The connection's authenticated user id (ZAP "User-Id" metadata: on CURVE links the
  /// peer's Z85 public key, docs/security.md); empty without authentication.
  std::string user_id;
};

/// A message that could not be decoded; `identity` says which peer sent it.
struct BadMessage {
  std::string identity;
  std::string reason;
};

/// A received batch frame (Batch.hpp): its messages, their payloads slices of `frame`.
struct ReceivedBatch {
  std::string identity;               ///< ROUTER: the peer's routing id; DEALER: empty.
  zmq::message_t frame;
  std::vector<BatchEntry> entries;
  std::string user_id;                ///< As Received::user_id.
};

/// Hello feature bit (next to feature_batches): the child, connected over ipc://, can map
/// a shared input segment (runtime/zmq/SharedInputs.hpp). Set by the ZeroMQ adapter.
constexpr std::uint32_t feature_shared_inputs = 2;

/// A shared input segment's offer (parent -> child: its name and size in bytes) or the
/// answer (child -> parent: whether it mapped it). Transport frames of their own
/// (docs/protocol.md "Shared input segments"), never seen by the node driver.
struct InputsFrame {
  std::string identity;  ///< ROUTER: the peer's routing id; DEALER: empty.
  bool offer = false;
  std::string name;          ///< offer: the segment's name
  std::uint64_t bytes = 0;   ///< offer: its size
  bool copied = false;       ///< offer: smaller than the child's buffer (the tasks beyond its
                             ///< slots wait in the parent until Results free some)
  bool mapped = false;       ///< answer
  std::string user_id;
};
constexpr std::uint32_t inputs_offer_magic = 0x4f524654;   ///< "TFRO" little-endian
constexpr std::uint32_t inputs_answer_magic = 0x41524654;  ///< "TFRA" little-endian

/// Sends an offer (to `identity` on a ROUTER); false if the peer is gone.
/// `copied`: InputsFrame::copied.
bool send_inputs_offer(zmq::socket_t& socket, const std::string& identity, const std::string& name, std::uint64_t bytes,
                       bool copied = false);
/// Sends an answer to the parent.
bool send_inputs_answer(zmq::socket_t& socket, bool mapped);

/// Receives one whole multipart message without blocking. Returns nullopt if none is
/// waiting. A malformed message is fully drained and returned as BadMessage; so is a
/// batch frame (a peer that did not announce msg::feature_batches never gets one).
std::optional<std::variant<Received, BadMessage>> try_receive(zmq::socket_t& socket, bool router);

/// As try_receive, and a batch frame is returned whole, its entries decoded, and a
/// shared input offer or answer as an InputsFrame.
std::optional<std::variant<Received, BadMessage, ReceivedBatch, InputsFrame>> try_receive_any(zmq::socket_t& socket, bool router);

/// Sends a batch frame (BatchWriter::take()) to `identity` on a ROUTER. Returns false if
/// a ROUTER peer is unknown/gone.
bool send_batch(zmq::socket_t& socket, FrameBuffer batch, const std::string* identity = nullptr);

/// Sends `m` (to `identity` on a ROUTER), followed by `payload` if the kind has one.
/// Returns false if a ROUTER peer is unknown/gone (ZMQ_ROUTER_MANDATORY).
bool send(zmq::socket_t& socket, const Message& m, const std::string* identity = nullptr,
          zmq::message_t* payload = nullptr);

/// A zero-copy message over a shared immutable buffer (kept alive until ZeroMQ is done).
zmq::message_t share_bytes(std::shared_ptr<const std::vector<std::byte>> buffer);

/// Sets the options every treefarm socket uses (linger, limits, router mandatory).
void configure_socket(zmq::socket_t& socket, bool router);

/// "tcp://127.0.0.1:41234" → true for loopback addresses (127.0.0.0/8, ::1, localhost, ipc, inproc).
bool is_loopback_endpoint(const std::string& endpoint);

}  // namespace treefarm::net
