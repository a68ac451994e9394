#include "runtime/zmq/Wire.hpp"

#include <cstring>

namespace treefarm::net {

namespace {
constexpr std::size_t max_frames = 8;
}

void configure_socket(zmq::socket_t& socket, bool router) {
  socket.set(zmq::sockopt::linger, 2000);
  // A peer that sends a bigger message than any task payload is disconnected by libzmq.
  socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(max_payload_bytes + max_body_bytes + header_bytes));
  socket.set(zmq::sockopt::sndhwm, 0);
  socket.set(zmq::sockopt::rcvhwm, 0);
  if (router) socket.set(zmq::sockopt::router_mandatory, true);
}

std::optional<std::variant<Received, BadMessage>> try_receive(zmq::socket_t& socket, bool router) {
  auto got = try_receive_any(socket, router);
  if (!got) return std::nullopt;
  if (auto* b = std::get_if<ReceivedBatch>(&*got)) return BadMessage{b->identity, "a batch frame, but batches were not announced"};
  if (auto* f = std::get_if<InputsFrame>(&*got)) return BadMessage{f->identity, "a shared input frame, but shared inputs were not announced"};
  if (auto* r = std::get_if<Received>(&*got)) return std::move(*r);
  return std::get<BadMessage>(std::move(*got));
}

namespace {
constexpr std::size_t inputs_head_bytes = 8;  // u32 magic, u16 wire_version, u16 flags (an answer: 0)
constexpr std::uint16_t inputs_copied_flag = 1;  // an offer's InputsFrame::copied
constexpr std::size_t max_inputs_name = 200;

std::optional<InputsFrame> inputs_frame_of(std::span<const std::byte> f) {
  std::uint32_t magic = 0;
  if (f.size() < sizeof magic) return std::nullopt;
  std::memcpy(&magic, f.data(), sizeof magic);
  if (magic != inputs_offer_magic && magic != inputs_answer_magic) return std::nullopt;
  if (f.size() < inputs_head_bytes) throw DecodeError("shared input frame truncated");
  std::uint16_t version = 0, flags = 0;
  std::memcpy(&version, f.data() + 4, 2);
  std::memcpy(&flags, f.data() + 6, 2);
  if (version != wire_version) throw DecodeError("shared input frame of protocol version " + std::to_string(version));
  const std::uint16_t known = magic == inputs_offer_magic ? inputs_copied_flag : 0;
  if ((flags & ~known) != 0) throw DecodeError("unknown shared input flags " + std::to_string(flags));
  InputsFrame out;
  out.copied = (flags & inputs_copied_flag) != 0;
  if (magic == inputs_answer_magic) {
    if (f.size() != inputs_head_bytes + 1 || std::to_integer<unsigned>(f[8]) > 1) throw DecodeError("malformed shared input answer");
    out.mapped = std::to_integer<unsigned>(f[8]) == 1;
    return out;
  }
  if (f.size() < inputs_head_bytes + 8 + 2 || f.size() > inputs_head_bytes + 8 + max_inputs_name) throw DecodeError("malformed shared input offer");
  out.offer = true;
  std::memcpy(&out.bytes, f.data() + 8, 8);
  out.name.assign(reinterpret_cast<const char*>(f.data() + 16), f.size() - 16);
  return out;
}

std::vector<std::byte> inputs_head(std::uint32_t magic) {
  std::vector<std::byte> b(inputs_head_bytes);
  std::memcpy(b.data(), &magic, 4);
  std::memcpy(b.data() + 4, &wire_version, 2);
  return b;
}

bool send_frame(zmq::socket_t& socket, const std::string* identity, const std::vector<std::byte>& b) {
  try {
    if (identity) socket.send(zmq::buffer(*identity), zmq::send_flags::sndmore);
    socket.send(zmq::message_t(b.data(), b.size()), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw;
  }
  return true;
}
}  // namespace

bool send_inputs_offer(zmq::socket_t& socket, const std::string& identity, const std::string& name, std::uint64_t bytes,
                       bool copied) {
  auto b = inputs_head(inputs_offer_magic);
  if (copied) std::memcpy(b.data() + 6, &inputs_copied_flag, 2);
  b.resize(16 + name.size());
  std::memcpy(b.data() + 8, &bytes, 8);
  std::memcpy(b.data() + 16, name.data(), name.size());
  return send_frame(socket, &identity, b);
}

bool send_inputs_answer(zmq::socket_t& socket, bool mapped) {
  auto b = inputs_head(inputs_answer_magic);
  b.push_back(std::byte{static_cast<unsigned char>(mapped ? 1 : 0)});
  return send_frame(socket, nullptr, b);
}

std::optional<std::variant<Received, BadMessage, ReceivedBatch, InputsFrame>> try_receive_any(zmq::socket_t& socket, bool router) {
  std::vector<zmq::message_t> frames;
  zmq::message_t frame;
  if (!socket.recv(frame, zmq::recv_flags::dontwait)) return std::nullopt;
  bool overflow = false;
  frames.push_back(std::move(frame));
  while (frames.back().more()) {
    zmq::message_t next;
    (void)socket.recv(next, zmq::recv_flags::none);  // the rest of a multipart message is already here
    if (frames.size() >= max_frames) {
      overflow = true;
      frames.back() = std::move(next);  // keep draining without growing
    } else {
      frames.push_back(std::move(next));
    }
  }
  std::string identity;
  std::size_t first = 0;
  if (router) {
    identity = frames[0].to_string();
    first = 1;
  }
  if (overflow) return BadMessage{identity, "more than " + std::to_string(max_frames) + " frames"};
  if (frames.size() <= first) return BadMessage{identity, "no header frame"};
  try {
    const auto& head = frames[first];
    const std::span<const std::byte> head_bytes(static_cast<const std::byte*>(head.data()), head.size());
    if (is_batch_frame(head_bytes)) {
      if (frames.size() != first + 1) return BadMessage{identity, "a batch frame followed by other frames"};
      auto entries = decode_batch(head_bytes);
      ReceivedBatch b{identity, std::move(frames[first]), std::move(entries), {}};
      if (const char* user = zmq_msg_gets(const_cast<zmq_msg_t*>(b.frame.handle()), "User-Id")) b.user_id = user;
      return b;
    }
    if (auto f = inputs_frame_of(head_bytes)) {
      if (frames.size() != first + 1) return BadMessage{identity, "a shared input frame followed by other frames"};
      f->identity = identity;
      if (const char* user = zmq_msg_gets(const_cast<zmq_msg_t*>(head.handle()), "User-Id")) f->user_id = user;
      return *f;
    }
    const std::size_t payloads = frames.size() - first - 1;
    Message m = decode(std::span<const std::byte>(static_cast<const std::byte*>(head.data()), head.size()), payloads);
    Received r{identity, std::move(m), std::nullopt, {}};
    // const_cast: zmq_msg_gets reads the message's metadata and changes nothing.
    if (const char* user = zmq_msg_gets(const_cast<zmq_msg_t*>(head.handle()), "User-Id")) r.user_id = user;
    if (payloads == 1) r.payload = std::move(frames[first + 1]);
    return r;
  } catch (const DecodeError& e) {
    return BadMessage{identity, e.what()};
  }
}

bool send(zmq::socket_t& socket, const Message& m, const std::string* identity, zmq::message_t* payload) {
  auto header = encode(m);
  const bool with_payload = payload_frames_of(m) == 1;
  if (with_payload && payload == nullptr) throw std::invalid_argument(std::string("a ") + kind_name(kind_of(m)) + " message needs its payload");
  try {
    if (identity) socket.send(zmq::buffer(*identity), zmq::send_flags::sndmore);
    socket.send(zmq::message_t(header.data(), header.size()), with_payload ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (with_payload) socket.send(std::move(*payload), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw;
  }
  return true;
}

bool send_batch(zmq::socket_t& socket, FrameBuffer batch, const std::string* identity) {
  try {
    if (identity) socket.send(zmq::buffer(*identity), zmq::send_flags::sndmore);
    auto* holder = new FrameBuffer(std::move(batch));
    socket.send(zmq::message_t(holder->data(), holder->size(),
                               [](void*, void* hint) { delete static_cast<FrameBuffer*>(hint); }, holder),
                zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw;
  }
  return true;
}

zmq::message_t share_bytes(std::shared_ptr<const std::vector<std::byte>> buffer) {
  auto* holder = new std::shared_ptr<const std::vector<std::byte>>(std::move(buffer));
  auto* data = const_cast<std::byte*>((*holder)->data());
  return zmq::message_t(data, (*holder)->size(),
                        [](void*, void* hint) { delete static_cast<std::shared_ptr<const std::vector<std::byte>>*>(hint); },
                        holder);
}

bool is_loopback_endpoint(const std::string& endpoint) {
  if (endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://")) return true;
  const auto scheme = endpoint.find("://");
  std::string host = scheme == std::string::npos ? endpoint : endpoint.substr(scheme + 3);
  if (host.starts_with("[")) host = host.substr(1, host.find(']') - 1);
  else host = host.substr(0, host.rfind(':'));
  // 127.0.0.0/8 only as a dotted address: a host name such as "127.example.org" is not loopback.
  const bool ipv4_loopback = host.starts_with("127.") && host.find_first_not_of("0123456789.") == std::string::npos;
  return ipv4_loopback || host == "::1" || host == "localhost";
}

}  // namespace treefarm::net
