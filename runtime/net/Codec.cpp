#include "runtime/net/Codec.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

namespace treefarm::net {

static_assert(std::endian::native == std::endian::little, "the wire format is little-endian; add byte swaps for big-endian hosts");

namespace {

/// AppInfo::kernel of a command application (model::Kernel::command; net does not link model).
constexpr std::uint8_t command_kernel = 4;
/// Where the body length sits in the 16-byte header: after magic (4), version (2), kind (2).
constexpr std::size_t body_length_offset = 8;

template <class... Ts>
struct Overloaded : Ts... { using Ts::operator()...; };
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;  // clang < 17 has no CTAD for aggregates

/// Appends to a vector of bytes: a lone header frame (std::vector) or a batch frame being
/// built (FrameBuffer), encoded in place, no buffer per message.
template <class Out>
class Writer {
 public:
  explicit Writer(Out& out) : bytes_(out) {}
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  /// put() of each value, in order.
  template <class... Ts>
  void put_all(const Ts&... values) {
    (put(values), ...);
  }
  void put_string(const std::string& s, std::size_t limit = max_name_bytes) {
    if (s.size() > limit) throw std::invalid_argument("string too long for the wire: " + s.substr(0, 32) + "...");
    put<std::uint16_t>(static_cast<std::uint16_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
  }
  void put_bytes(const std::vector<std::uint8_t>& v) {
    const auto* p = reinterpret_cast<const std::byte*>(v.data());
    bytes_.insert(bytes_.end(), p, p + v.size());
  }
  Out& bytes() { return bytes_; }

 private:
  Out& bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> b) : bytes_(b) {}
  template <class T>
  T get(const char* field) {
    if (bytes_.size() - pos_ < sizeof(T)) throw DecodeError(std::string("truncated body at field '") + field + "'");
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_string(const char* field, std::size_t limit = max_name_bytes) {
    const auto n = get<std::uint16_t>(field);
    if (n > limit) throw DecodeError(std::string("field '") + field + "' is " + std::to_string(n) + " bytes, limit " + std::to_string(limit));
    if (bytes_.size() - pos_ < n) throw DecodeError(std::string("truncated string at field '") + field + "'");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  std::vector<std::uint8_t> get_bytes(std::size_t n, const char* field) {
    if (bytes_.size() - pos_ < n) throw DecodeError(std::string("truncated bytes at field '") + field + "'");
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes_.data() + pos_);
    pos_ += n;
    return std::vector<std::uint8_t>(p, p + n);
  }
  /// A count of tasks (a Request's or a Pull's), 1 to 2^20; `what` starts the error.
  std::uint32_t get_task_count(const char* what) {
    const auto n = get<std::uint32_t>("count");
    if (n == 0 || n > 1u << 20) throw DecodeError(std::string(what) + " " + std::to_string(n) + " tasks");
    return n;
  }
  /// `n` pairs (task_id u64, bc u32): a PullReply's or a Push's tasks with their counters.
  void get_ids_and_bcs(std::uint32_t n, std::vector<std::uint64_t>& ids, std::vector<std::uint32_t>& bcs) {
    ids.reserve(n);
    bcs.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      ids.push_back(get<std::uint64_t>("task_id"));
      bcs.push_back(get<std::uint32_t>("bc"));
    }
  }
  double get_finite(const char* field) {
    const double v = get<double>(field);
    if (!std::isfinite(v)) throw DecodeError(std::string("field '") + field + "' is not a finite number");
    return v;
  }
  bool at_end() const { return pos_ == bytes_.size(); }
  void finish() const {
    if (pos_ != bytes_.size()) throw DecodeError(std::to_string(bytes_.size() - pos_) + " unexpected trailing bytes");
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
};

/// A Heartbeat's trailing estimates (docs/live-model.md): every figure positive and
/// finite, spreads finite and not negative, kinds and application indices in range.
std::vector<msg::Estimate> decode_estimates(Reader& r) {
  const auto count = r.get<std::uint32_t>("estimate_count");
  if (count == 0 || count > max_estimates)
    throw DecodeError("Heartbeat with " + std::to_string(count) + " estimates, expected 1 to " + std::to_string(max_estimates));
  std::vector<msg::Estimate> out;
  out.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    msg::Estimate e;
    e.node = r.get_string("estimate.node");
    if (e.node.empty()) throw DecodeError("Heartbeat with an estimate of no node");
    const auto what = r.get<std::uint8_t>("estimate.what");
    if (what > 3) throw DecodeError("Heartbeat with an estimate of unknown kind " + std::to_string(what));
    e.what = static_cast<msg::Estimate::What>(what);
    e.app = r.get<std::uint16_t>("estimate.app");
    e.mean = r.get_finite("estimate.mean");
    e.spread = r.get_finite("estimate.spread");
    e.samples = r.get<std::uint32_t>("estimate.samples");
    e.shifts = r.get<std::uint32_t>("estimate.shifts");
    if (!(e.mean > 0) || e.spread < 0 || e.app >= max_apps || e.shifts > e.samples)
      throw DecodeError("Heartbeat with an impossible estimate of '" + e.node + "'");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

// The wire Kind of each alternative of Message is its index + 1: Messages.hpp lists the
// kinds and the alternatives in the same order, which these assertions hold it to.
template <Kind k, typename T>
constexpr bool kind_is = std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(k) - 1, Message>, T>;
static_assert(std::variant_size_v<Message> == static_cast<std::size_t>(Kind::capacity));
static_assert(kind_is<Kind::capacity, msg::Capacity>);
static_assert(kind_is<Kind::probe_request, msg::ProbeRequest> && kind_is<Kind::probe_report, msg::ProbeReport>);
static_assert(kind_is<Kind::hello, msg::Hello> && kind_is<Kind::welcome, msg::Welcome> &&
              kind_is<Kind::request, msg::Request> && kind_is<Kind::task, msg::Task> &&
              kind_is<Kind::result, msg::Result> && kind_is<Kind::node_joined, msg::NodeJoined> &&
              kind_is<Kind::heartbeat, msg::Heartbeat> && kind_is<Kind::shutdown, msg::Shutdown> &&
              kind_is<Kind::bye, msg::Bye> && kind_is<Kind::probe, msg::Probe> && kind_is<Kind::probe_ack, msg::ProbeAck> &&
              kind_is<Kind::measure, msg::Measure> && kind_is<Kind::policy, msg::Policy> &&
              kind_is<Kind::received, msg::Received> && kind_is<Kind::tree_query, msg::TreeQuery> &&
              kind_is<Kind::tree_info, msg::TreeInfo> && kind_is<Kind::pull, msg::Pull> &&
              kind_is<Kind::pull_reply, msg::PullReply> && kind_is<Kind::blame, msg::Blame> &&
              kind_is<Kind::blame_reply, msg::BlameReply> && kind_is<Kind::push, msg::Push> &&
              kind_is<Kind::push_reply, msg::PushReply>);

/// The names of the kinds, in Kind order (those of the msg:: structs).
constexpr std::array<const char*, std::variant_size_v<Message>> kind_names = {
    "Hello", "Welcome", "Request", "Task", "Result", "NodeJoined", "Heartbeat",
    "Shutdown", "Bye", "Probe", "ProbeAck", "Measure", "Policy", "Received", "TreeQuery", "TreeInfo", "Pull",
    "PullReply", "Blame", "BlameReply", "Push", "PushReply", "ProbeRequest", "ProbeReport", "Capacity"};

Kind kind_of(const Message& m) { return static_cast<Kind>(m.index() + 1); }

const char* kind_name(Kind k) {
  const auto i = static_cast<std::size_t>(k);
  return i >= 1 && i <= kind_names.size() ? kind_names[i - 1] : "?";
}

std::size_t payload_frames_for(Kind k) { return k == Kind::task || k == Kind::probe || k == Kind::tree_info ? 1 : 0; }

std::size_t payload_frames_of(const Message& m) {
  if (const auto* r = std::get_if<msg::Result>(&m)) return r->has_output ? 1 : 0;
  return payload_frames_for(kind_of(m));
}

std::vector<std::byte> encode(const Message& m) {
  std::vector<std::byte> out;
  out.reserve(64);  // bytes: a Task's or Result's whole header frame, in one allocation
  encode_into(m, out);
  return out;
}

namespace {
template <class Out>
void encode_appending(const Message& m, Out& out) {
  const std::size_t start = out.size();
  Writer<Out> body(out);
  // The header first, its body length written once the body is there.
  body.put_all(wire_magic, wire_version, static_cast<std::uint16_t>(kind_of(m)), std::uint32_t{0},
               static_cast<std::uint16_t>(payload_frames_of(m)), std::uint16_t{0});
  try {
    std::visit(Overloaded{
        [&](const msg::Hello& h) {
          body.put_string(h.name);
          body.put_all(h.cores, h.memory, h.features);
        },
        [&](const msg::Welcome& w) {
          body.put(w.buffer);
          body.put_string(w.policy);
          body.template put<std::uint8_t>(w.one_port ? 1 : 0);
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(w.apps.size()));
          for (const auto& a : w.apps) {
            body.put_string(a.name);
            body.put_all(a.kernel, a.n, a.bytes, a.flops, a.weight, a.tasks, a.cores_per_task, a.memory_per_task);
            if (a.kernel == command_kernel) {
              if (a.argv.empty() || a.argv.size() > max_argv) throw std::invalid_argument("command application with no or too many arguments");
              body.template put<std::uint16_t>(static_cast<std::uint16_t>(a.argv.size()));
              for (const auto& arg : a.argv) body.put_string(arg, max_text_bytes);
              body.put(a.timeout);
              body.put_string(a.expect_digest);
              body.put(a.max_output_bytes);  // output files (0: not sent back)
              body.template put<std::uint8_t>(a.task_fields ? 1 : 0);  // placeholders in front of each input
            }
          }
          body.put_all(w.calibrate_reps, w.probe_bytes, w.seed);
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(w.hints.size()));
          for (const auto& h : w.hints) {
            body.put_string(h.name);
            body.put(h.link_bandwidth);
            for (const auto* v : {&h.task_seconds, &h.alpha, &h.received}) {
              if (v->size() != w.apps.size()) throw std::invalid_argument("node hint with a value per app expected");
              for (double x : *v) body.put(x);
            }
          }
          body.put(w.features);
          // Tree repair fields: optional, left out when empty (the bytes of a Welcome
          // without them are those of wire version 3 before tree repair), unless the
          // requirements block follows them.
          const bool requirements = std::any_of(w.apps.begin(), w.apps.end(),
                                                [](const msg::AppInfo& a) { return a.disk_per_task > 0 || a.min_speed > 0; });
          if (w.sender.empty() && w.ancestors.empty() && !requirements) return;
          body.put_string(w.sender);
          if (w.ancestors.size() > max_ancestors) throw std::invalid_argument("Welcome with too many ancestors");
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(w.ancestors.size()));
          for (const auto& a : w.ancestors) {
            body.put_string(a.name);
            body.put_string(a.endpoint);
            body.put_string(a.public_key);
          }
          // Requirements (optional): one (disk_per_task, min_speed) per app.
          if (!requirements) return;
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(w.apps.size()));
          for (const auto& a : w.apps) body.put_all(a.disk_per_task, a.min_speed);
        },
        [&](const msg::Request& r) { body.put(r.count); },
        [&](const msg::Task& t) { body.put(t.task_id); },
        [&](const msg::Result& r) {
          body.put(r.task_id);
          body.put_string(r.node);
          body.put_all(r.compute_seconds, r.queued_seconds, r.checksum);
          body.template put<std::uint8_t>(r.failed ? 1 : 0);
          body.put_string(r.error.size() > max_text_bytes ? r.error.substr(0, max_text_bytes) : r.error, max_text_bytes);
          if (r.has_output) {  // optional trailing fields (output files)
            if (r.output_bytes > max_payload_bytes) throw std::invalid_argument("result output too large to send");
            body.template put<std::uint8_t>(1);
            body.put(r.output_bytes);
          }
        },
        [&](const msg::NodeJoined& j) {
          body.put_string(j.name);
          body.put_string(j.parent);
          body.put(j.cores);
          body.put(j.memory);
        },
        [&](const msg::Heartbeat& h) {
          if (h.loads.empty() && h.estimates.empty()) return;  // optional trailing lists (`treefarm status`)
          if (h.loads.size() > max_loads) throw std::invalid_argument("heartbeat with too many node states");
          if (h.estimates.size() > max_estimates) throw std::invalid_argument("heartbeat with too many estimates");
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(h.loads.size()));  // 0 only before estimates
          for (const auto& l : h.loads) {
            body.put_string(l.name);
            body.put_all(l.cores, l.busy_cores, l.queued, l.load1);
          }
          if (h.estimates.empty()) return;
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(h.estimates.size()));
          for (const auto& e : h.estimates) {
            body.put_string(e.node);
            body.put_all(static_cast<std::uint8_t>(e.what), e.app, e.mean, e.spread, e.samples, e.shifts);
          }
        },
        [&](const msg::Shutdown& s) {
          body.put_string(s.reason);
          if (s.reset) body.template put<std::uint8_t>(1);  // optional trailing field (served trees)
        },
        [&](const msg::Bye&) {},
        [&](const msg::Probe& p) { body.put(p.seq); },
        [&](const msg::ProbeAck& p) { body.put(p.seq); },
        [&](const msg::Measure& x) {
          body.put_string(x.node);
          body.put_string(x.app);
          body.put(static_cast<std::uint8_t>(x.what));
          body.put(x.value);
        },
        [&](const msg::Policy& p) {
          if (p.payload.size() > max_policy_bytes) throw std::invalid_argument("policy message too large to send");
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(p.payload.size()));
          body.put_bytes(p.payload);
        },
        [&](const msg::Received& x) {
          if (x.task_ids.empty() || x.task_ids.size() > max_received_ids)
            throw std::invalid_argument("Received with " + std::to_string(x.task_ids.size()) + " task ids");
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(x.task_ids.size()));
          for (auto id : x.task_ids) body.put(id);
        },
        [&](const msg::TreeQuery& q) {
          if (q.probe_bytes > max_tree_probe_bytes) throw std::invalid_argument("TreeQuery probe too large");
          body.put(q.probe_bytes);
        },
        [&](const msg::TreeInfo& t) {
          if (t.task_seconds.size() != t.apps.size()) throw std::invalid_argument("TreeInfo with a task time per app expected");
          if (t.apps.size() > max_apps) throw std::invalid_argument("TreeInfo with too many applications");
          body.put_string(t.name);
          body.put_string(t.endpoint);
          body.put_string(t.parent_endpoint);
          body.put_all(t.cores, t.link_bandwidth);
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(t.apps.size()));
          for (std::size_t k = 0; k < t.apps.size(); ++k) {
            const auto& a = t.apps[k];
            body.put_string(a.name);
            body.put_all(a.bytes, a.flops, a.weight, a.cores_per_task, t.task_seconds[k]);
          }
          const std::size_t children = std::min(t.children.size(), max_tree_children);
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(children));
          for (std::size_t i = 0; i < children; ++i) {
            const auto& c = t.children[i];
            body.put_string(c.name);
            body.put_string(c.endpoint);
            body.put_all(c.cores, c.link_bandwidth);
          }
          body.put_string(t.public_key);
          body.put_string(t.parent_public_key);
          for (std::size_t i = 0; i < children; ++i) body.put_string(t.children[i].public_key);
        },
        [&](const msg::Pull& x) {
          if (x.count == 0) throw std::invalid_argument("Pull of 0 tasks");
          body.put(x.count);
          body.put(x.nbc);
        },
        [&](const msg::PullReply& x) {
          if (x.task_ids.size() > max_received_ids || x.bcs.size() != x.task_ids.size() ||
              (x.task_ids.empty() && x.rejected == 0))
            throw std::invalid_argument("PullReply with " + std::to_string(x.task_ids.size()) + " task ids, " +
                                        std::to_string(x.bcs.size()) + " counters, " + std::to_string(x.rejected) +
                                        " rejected");
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(x.task_ids.size()));
          for (std::size_t i = 0; i < x.task_ids.size(); ++i) {
            body.put(x.task_ids[i]);
            body.put(x.bcs[i]);
          }
          body.put(x.rejected);
        },
        [&](const msg::Blame& x) {
          if (!(x.wait_seconds >= 0 && x.wait_seconds <= 3600)) throw std::invalid_argument("Blame with a wait out of 0..3600 s");
          body.put(x.task_id);
          body.put_string(x.node);
          body.put(x.wait_seconds);
        },
        [&](const msg::BlameReply& x) {
          body.put(x.task_id);
          body.put_string(x.culprit);
        },
        [&](const msg::Push& x) {
          if (x.task_ids.empty() || x.task_ids.size() > max_received_ids || x.bcs.size() != x.task_ids.size())
            throw std::invalid_argument("Push with " + std::to_string(x.task_ids.size()) + " task ids, " +
                                        std::to_string(x.bcs.size()) + " counters");
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(x.task_ids.size()));
          for (std::size_t i = 0; i < x.task_ids.size(); ++i) body.put_all(x.task_ids[i], x.bcs[i]);
        },
        [&](const msg::PushReply& x) {
          if (x.refused.size() > max_received_ids || (!x.answer && !x.refused.empty()) || x.free > 1u << 20)
            throw std::invalid_argument("PushReply out of range");
          body.template put<std::uint8_t>(x.answer ? 1 : 0);
          body.put_all(x.free, x.queue, x.nbc);
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(x.refused.size()));
          for (auto id : x.refused) body.put(id);
        },
        [&](const msg::Capacity& x) {
          if (x.fits.empty() || x.fits.size() > max_apps) throw std::invalid_argument("Capacity for no or too many applications");
          body.put_all(x.cores, x.memory, x.disk);
          body.template put<std::uint32_t>(static_cast<std::uint32_t>(x.fits.size()));
          for (bool f : x.fits) body.template put<std::uint8_t>(f ? 1 : 0);
        },
        [&]<std::uint16_t K>(const msg::Unassigned<K>&) {
          throw std::invalid_argument("message kind " + std::to_string(K) + " is not defined in this build");
        },
        [&](const msg::ProbeRequest& x) {
          if (x.bytes > max_tree_probe_bytes || x.rounds == 0 || x.rounds > max_probe_rounds || !(x.timeout > 0))
            throw std::invalid_argument("ProbeRequest out of range");
          body.put_string(x.target);
          body.put_string(x.target_key);
          body.put_all(x.bytes, x.rounds, x.timeout);
        },
        [&](const msg::ProbeReport& x) {
          body.put_string(x.node);
          body.put_string(x.target);
          body.put_string(x.target_name);
          body.template put<std::uint8_t>(x.ok ? 1 : 0);
          body.put_string(x.error.size() > max_text_bytes ? x.error.substr(0, max_text_bytes) : x.error, max_text_bytes);
          body.put_all(x.bandwidth, x.round_trip, x.speed, x.cores);
        }},
        m);
    const std::size_t body_len = out.size() - start - header_bytes;
    if (body_len > max_body_bytes) throw std::invalid_argument("message body too large to send");
    const auto len = static_cast<std::uint32_t>(body_len);
    std::memcpy(out.data() + start + body_length_offset, &len, sizeof len);
  } catch (...) {
    out.resize(start);  // nothing of a message that could not be encoded stays
    throw;
  }
}
}  // namespace

void encode_into(const Message& m, std::vector<std::byte>& out) { encode_appending(m, out); }
void encode_into(const Message& m, FrameBuffer& out) { encode_appending(m, out); }

Message decode(std::span<const std::byte> header_frame, std::size_t payload_frames) {
  if (header_frame.size() < header_bytes)
    throw DecodeError("header frame of " + std::to_string(header_frame.size()) + " bytes, expected at least " + std::to_string(header_bytes));
  Reader head(header_frame.first(header_bytes));
  if (head.get<std::uint32_t>("magic") != wire_magic) throw DecodeError("bad magic: not a treefarm message");
  const auto version = head.get<std::uint16_t>("version");
  if (version != wire_version)
    throw DecodeError("protocol version " + std::to_string(version) + ", this node speaks " + std::to_string(wire_version));
  const auto raw_kind = head.get<std::uint16_t>("kind");
  if (raw_kind < static_cast<std::uint16_t>(Kind::hello) || raw_kind > static_cast<std::uint16_t>(Kind::capacity))
    throw DecodeError("unknown message kind " + std::to_string(raw_kind));
  const auto kind = static_cast<Kind>(raw_kind);
  const auto body_len = head.get<std::uint32_t>("body_length");
  const auto declared_payloads = head.get<std::uint16_t>("payload_frames");
  if (head.get<std::uint16_t>("reserved") != 0) throw DecodeError("reserved header field is not zero");
  if (body_len > max_body_bytes) throw DecodeError("body length " + std::to_string(body_len) + " over the limit " + std::to_string(max_body_bytes));
  if (header_frame.size() != header_bytes + body_len)
    throw DecodeError("header says " + std::to_string(body_len) + " body bytes, frame has " + std::to_string(header_frame.size() - header_bytes));
  // A Result may carry its output in one payload frame; its body says whether (below).
  const bool payload_ok = declared_payloads == payload_frames_for(kind) || (kind == Kind::result && declared_payloads == 1);
  if (!payload_ok || payload_frames != declared_payloads)
    throw DecodeError(std::string(kind_name(kind)) + " with " + std::to_string(payload_frames) + " payload frames, expected " + std::to_string(payload_frames_for(kind)));

  Reader r(header_frame.subspan(header_bytes));
  Message m;
  switch (kind) {
    case Kind::hello: {
      msg::Hello h;
      h.name = r.get_string("name");
      if (h.name.empty()) throw DecodeError("Hello with an empty node name");
      h.cores = r.get<std::uint32_t>("cores");
      h.memory = r.get<std::uint64_t>("memory");
      if (h.cores > 1u << 16) throw DecodeError("Hello with an absurd core count");
      h.features = r.get<std::uint32_t>("features");
      m = h;
      break;
    }
    case Kind::welcome: {
      msg::Welcome w;
      w.buffer = r.get<std::uint32_t>("buffer");
      if (w.buffer == 0 || w.buffer > 1u << 20) throw DecodeError("Welcome with buffer out of range");
      w.policy = r.get_string("policy");
      w.one_port = r.get<std::uint8_t>("one_port") != 0;
      const auto count = r.get<std::uint32_t>("app_count");
      if (count == 0 || count > max_apps) throw DecodeError("Welcome with " + std::to_string(count) + " applications");
      for (std::uint32_t i = 0; i < count; ++i) {
        msg::AppInfo a;
        a.name = r.get_string("app.name");
        a.kernel = r.get<std::uint8_t>("app.kernel");
        if (a.kernel > command_kernel) throw DecodeError("Welcome with unknown kernel " + std::to_string(a.kernel));
        a.n = r.get<std::uint32_t>("app.n");
        a.bytes = r.get<std::uint64_t>("app.bytes");
        if (a.bytes > max_payload_bytes) throw DecodeError("Welcome with an application of absurd size");
        a.flops = r.get_finite("app.flops");
        a.weight = r.get_finite("app.weight");
        if (!(a.weight > 0)) throw DecodeError("Welcome with a non-positive weight");
        a.tasks = r.get<std::uint64_t>("app.tasks");
        if (a.tasks > (std::uint64_t{1} << 40)) throw DecodeError("Welcome with too many tasks");
        a.cores_per_task = r.get<std::uint32_t>("app.cores_per_task");
        if (a.cores_per_task == 0 || a.cores_per_task > 1u << 16) throw DecodeError("Welcome with cores_per_task out of range");
        a.memory_per_task = r.get<std::uint64_t>("app.memory_per_task");
        if (a.kernel == command_kernel) {
          const auto argc = r.get<std::uint16_t>("app.argc");
          if (argc == 0 || argc > max_argv) throw DecodeError("Welcome with a command of " + std::to_string(argc) + " arguments");
          for (std::uint16_t j = 0; j < argc; ++j) a.argv.push_back(r.get_string("app.argv", max_text_bytes));
          if (a.argv[0].empty()) throw DecodeError("Welcome with a command that names no program");
          a.timeout = r.get_finite("app.timeout");
          if (!(a.timeout >= 0)) throw DecodeError("Welcome with a negative command timeout");
          a.expect_digest = r.get_string("app.expect_digest");
          a.max_output_bytes = r.get<std::uint64_t>("app.max_output_bytes");
          if (a.max_output_bytes > max_payload_bytes)
            throw DecodeError("Welcome with a command output limit of " + std::to_string(a.max_output_bytes) +
                              " bytes, over the limit " + std::to_string(max_payload_bytes));
          const auto fields = r.get<std::uint8_t>("app.task_fields");
          if (fields > 1) throw DecodeError("Welcome with task_fields " + std::to_string(fields));
          a.task_fields = fields == 1;
        }
        w.apps.push_back(std::move(a));
      }
      w.calibrate_reps = r.get<std::uint32_t>("calibrate_reps");
      if (w.calibrate_reps > 10000) throw DecodeError("Welcome with an absurd calibration repetition count");
      w.probe_bytes = r.get<std::uint64_t>("probe_bytes");
      if (w.probe_bytes > max_payload_bytes) throw DecodeError("Welcome with an absurd probe size");
      w.seed = r.get<std::uint64_t>("seed");
      const auto hints = r.get<std::uint32_t>("hint_count");
      if (hints > max_body_bytes / 8) throw DecodeError("Welcome with an absurd hint count");
      for (std::uint32_t i = 0; i < hints; ++i) {
        msg::NodeHint h;
        h.name = r.get_string("hint.name");
        h.link_bandwidth = r.get_finite("hint.link_bandwidth");
        for (auto* v : {&h.task_seconds, &h.alpha, &h.received})
          for (std::size_t k = 0; k < w.apps.size(); ++k) {
            const double x = r.get_finite("hint.value");
            if (x < 0) throw DecodeError("Welcome with a negative hint value");
            v->push_back(x);
          }
        if (h.link_bandwidth < 0) throw DecodeError("Welcome with a negative link bandwidth");
        w.hints.push_back(std::move(h));
      }
      w.features = r.get<std::uint32_t>("features");
      if (!r.at_end()) {  // tree repair fields (optional: absent from older Welcomes)
        w.sender = r.get_string("sender");
        const auto n = r.get<std::uint32_t>("ancestor_count");
        if (n > max_ancestors) throw DecodeError("Welcome with " + std::to_string(n) + " ancestors, limit " + std::to_string(max_ancestors));
        for (std::uint32_t i = 0; i < n; ++i) {
          msg::Ancestor a;
          a.name = r.get_string("ancestor.name");
          a.endpoint = r.get_string("ancestor.endpoint");
          a.public_key = r.get_string("ancestor.public_key");
          if (a.name.empty() || a.endpoint.empty()) throw DecodeError("Welcome with an ancestor without name or endpoint");
          if (!a.public_key.empty() && a.public_key.size() != 40)
            throw DecodeError("Welcome with an ancestor key of " + std::to_string(a.public_key.size()) + " characters, expected 40 (Z85)");
          w.ancestors.push_back(std::move(a));
        }
      }
      if (!r.at_end()) {  // requirements (optional)
        const auto n = r.get<std::uint32_t>("requirement_count");
        if (n != w.apps.size())
          throw DecodeError("Welcome with requirements for " + std::to_string(n) + " applications, expected " + std::to_string(w.apps.size()));
        for (auto& a : w.apps) {
          a.disk_per_task = r.get<std::uint64_t>("disk_per_task");
          a.min_speed = r.get_finite("min_speed");
          if (a.min_speed < 0) throw DecodeError("Welcome with a negative min_speed");
        }
      }
      m = std::move(w);
      break;
    }
    case Kind::request: m = msg::Request{r.get_task_count("Request for")}; break;
    case Kind::task: m = msg::Task{r.get<std::uint64_t>("task_id")}; break;
    case Kind::result: {
      msg::Result s;
      s.task_id = r.get<std::uint64_t>("task_id");
      s.node = r.get_string("node");
      s.compute_seconds = r.get_finite("compute_seconds");
      s.queued_seconds = r.get_finite("queued_seconds");
      s.checksum = r.get<double>("checksum");  // may be NaN if the kernel went wrong: the master judges
      s.failed = r.get<std::uint8_t>("failed") != 0;
      s.error = r.get_string("error", max_text_bytes);
      if (!r.at_end()) {  // output files: absent from a Result without output
        const auto has = r.get<std::uint8_t>("has_output");
        if (has != 1) throw DecodeError("Result with has_output byte " + std::to_string(has) + ", expected 1 or absent");
        s.has_output = true;
        s.output_bytes = r.get<std::uint64_t>("output_bytes");
        if (s.output_bytes > max_payload_bytes)
          throw DecodeError("Result with an output of " + std::to_string(s.output_bytes) + " bytes, over the limit " +
                            std::to_string(max_payload_bytes));
      }
      if (payload_frames != (s.has_output ? 1u : 0u))
        throw DecodeError("Result with " + std::to_string(payload_frames) + " payload frames, expected " +
                          (s.has_output ? "1 (it carries an output)" : "0"));
      m = std::move(s);
      break;
    }
    case Kind::node_joined:
      m = msg::NodeJoined{r.get_string("name"), r.get_string("parent"), r.get<std::uint32_t>("cores"),
                          r.get<std::uint64_t>("memory")};
      break;
    case Kind::heartbeat: {
      msg::Heartbeat h;
      if (!r.at_end()) {  // node states (child → parent), absent from an empty Heartbeat
        const auto count = r.get<std::uint32_t>("load_count");
        if ((count == 0 && r.at_end()) || count > max_loads)
          throw DecodeError("Heartbeat with " + std::to_string(count) + " node states, expected 1 to " + std::to_string(max_loads));
        for (std::uint32_t i = 0; i < count; ++i) {
          msg::NodeLoad l;
          l.name = r.get_string("load.name");
          if (l.name.empty()) throw DecodeError("Heartbeat with a node state of no name");
          l.cores = r.get<std::uint32_t>("load.cores");
          l.busy_cores = r.get<std::uint32_t>("load.busy_cores");
          l.queued = r.get<std::uint32_t>("load.queued");
          l.load1 = r.get_finite("load.load1");
          if (l.cores > 1u << 16 || l.busy_cores > l.cores || !(l.load1 >= -1))
            throw DecodeError("Heartbeat with an impossible state of '" + l.name + "'");
          h.loads.push_back(std::move(l));
        }
        if (!r.at_end()) h.estimates = decode_estimates(r);
        else if (count == 0) throw DecodeError("Heartbeat with no node state and no estimate");
      }
      m = std::move(h);
      break;
    }
    case Kind::shutdown: {
      msg::Shutdown s{r.get_string("reason")};
      if (!r.at_end()) {  // served trees: absent from older Shutdowns
        const auto reset = r.get<std::uint8_t>("reset");
        if (reset != 1) throw DecodeError("Shutdown with reset byte " + std::to_string(reset) + ", expected 1 or absent");
        s.reset = true;
      }
      m = std::move(s);
      break;
    }
    case Kind::bye: m = msg::Bye{}; break;
    case Kind::probe: m = msg::Probe{r.get<std::uint32_t>("seq")}; break;
    case Kind::probe_ack: m = msg::ProbeAck{r.get<std::uint32_t>("seq")}; break;
    case Kind::measure: {
      msg::Measure x;
      x.node = r.get_string("node");
      x.app = r.get_string("app");
      const auto what = r.get<std::uint8_t>("what");
      if (what > 7) throw DecodeError("Measure of unknown kind " + std::to_string(what));
      x.what = static_cast<msg::Measure::What>(what);
      x.value = r.get_finite("value");
      if (x.value < 0) throw DecodeError("Measure with a negative value");
      m = std::move(x);
      break;
    }
    case Kind::policy: {
      const auto n = r.get<std::uint32_t>("payload_length");
      if (n > max_policy_bytes) throw DecodeError("Policy message of " + std::to_string(n) + " bytes, limit " + std::to_string(max_policy_bytes));
      m = msg::Policy{r.get_bytes(n, "payload")};
      break;
    }
    case Kind::received: {
      const auto n = r.get<std::uint32_t>("count");
      if (n == 0 || n > max_received_ids)
        throw DecodeError("Received with " + std::to_string(n) + " task ids, expected 1 to " + std::to_string(max_received_ids));
      msg::Received x;
      x.task_ids.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) x.task_ids.push_back(r.get<std::uint64_t>("task_id"));
      m = std::move(x);
      break;
    }
    case Kind::tree_query: {
      msg::TreeQuery q{r.get<std::uint64_t>("probe_bytes")};
      if (q.probe_bytes > max_tree_probe_bytes) throw DecodeError("TreeQuery with a probe of " + std::to_string(q.probe_bytes) + " bytes");
      m = q;
      break;
    }
    case Kind::tree_info: {
      msg::TreeInfo t;
      t.name = r.get_string("name");
      if (t.name.empty()) throw DecodeError("TreeInfo with an empty node name");
      t.endpoint = r.get_string("endpoint");
      t.parent_endpoint = r.get_string("parent_endpoint");
      t.cores = r.get<std::uint32_t>("cores");
      if (t.cores > 1u << 16) throw DecodeError("TreeInfo with an absurd core count");
      t.link_bandwidth = r.get_finite("link_bandwidth");
      if (t.link_bandwidth < 0) throw DecodeError("TreeInfo with a negative link bandwidth");
      const auto apps = r.get<std::uint32_t>("app_count");
      if (apps > max_apps) throw DecodeError("TreeInfo with " + std::to_string(apps) + " applications");
      for (std::uint32_t k = 0; k < apps; ++k) {
        msg::TreeInfo::App a;
        a.name = r.get_string("app.name");
        a.bytes = r.get<std::uint64_t>("app.bytes");
        if (a.bytes > max_payload_bytes) throw DecodeError("TreeInfo with an application of absurd size");
        a.flops = r.get_finite("app.flops");
        a.weight = r.get_finite("app.weight");
        a.cores_per_task = r.get<std::uint32_t>("app.cores_per_task");
        const double seconds = r.get_finite("app.task_seconds");
        if (a.flops < 0 || !(a.weight > 0) || a.cores_per_task == 0 || a.cores_per_task > 1u << 16 || seconds < 0)
          throw DecodeError("TreeInfo with an application out of range");
        t.apps.push_back(std::move(a));
        t.task_seconds.push_back(seconds);
      }
      const auto children = r.get<std::uint32_t>("child_count");
      if (children > max_tree_children) throw DecodeError("TreeInfo with " + std::to_string(children) + " children");
      for (std::uint32_t i = 0; i < children; ++i) {
        msg::TreeInfo::Child c;
        c.name = r.get_string("child.name");
        c.endpoint = r.get_string("child.endpoint");
        c.cores = r.get<std::uint32_t>("child.cores");
        c.link_bandwidth = r.get_finite("child.link_bandwidth");
        if (c.name.empty() || c.cores > 1u << 16 || c.link_bandwidth < 0) throw DecodeError("TreeInfo with a child out of range");
        t.children.push_back(std::move(c));
      }
      if (!r.at_end()) {  // CURVE keys (optional)
        t.public_key = r.get_string("public_key");
        t.parent_public_key = r.get_string("parent_public_key");
        for (auto& c : t.children) c.public_key = r.get_string("child.public_key");
        auto bad_key = [](const std::string& k) { return !k.empty() && k.size() != 40; };
        bool bad = bad_key(t.public_key) || bad_key(t.parent_public_key);
        for (const auto& c : t.children) bad = bad || bad_key(c.public_key);
        if (bad) throw DecodeError("TreeInfo with a public key that is not 40 Z85 characters");
      }
      m = std::move(t);
      break;
    }
    // Braced initialisation (here and below) reads the fields in the order written.
    case Kind::pull: m = msg::Pull{r.get_task_count("Pull of"), r.get<std::uint32_t>("nbc")}; break;
    case Kind::pull_reply: {
      const auto n = r.get<std::uint32_t>("count");
      if (n > max_received_ids)
        throw DecodeError("PullReply with " + std::to_string(n) + " task ids, expected at most " + std::to_string(max_received_ids));
      msg::PullReply x;
      r.get_ids_and_bcs(n, x.task_ids, x.bcs);
      x.rejected = r.get<std::uint32_t>("rejected");
      if (n == 0 && x.rejected == 0) throw DecodeError("PullReply that neither returns nor rejects a task");
      m = std::move(x);
      break;
    }
    case Kind::blame: {
      msg::Blame x;
      x.task_id = r.get<std::uint64_t>("task_id");
      x.node = r.get_string("node");
      x.wait_seconds = r.get_finite("wait_seconds");
      if (x.wait_seconds < 0 || x.wait_seconds > 3600) throw DecodeError("Blame with a wait of " + std::to_string(x.wait_seconds) + " s");
      m = std::move(x);
      break;
    }
    case Kind::blame_reply: m = msg::BlameReply{r.get<std::uint64_t>("task_id"), r.get_string("culprit")}; break;
    case Kind::push: {
      const auto n = r.get<std::uint32_t>("count");
      if (n == 0 || n > max_received_ids)
        throw DecodeError("Push of " + std::to_string(n) + " tasks, expected 1 to " + std::to_string(max_received_ids));
      msg::Push x;
      r.get_ids_and_bcs(n, x.task_ids, x.bcs);
      m = std::move(x);
      break;
    }
    case Kind::push_reply: {
      msg::PushReply x;
      const auto answer = r.get<std::uint8_t>("answer");
      if (answer > 1) throw DecodeError("PushReply with answer " + std::to_string(answer) + ", expected 0 or 1");
      x.answer = answer == 1;
      x.free = r.get<std::uint32_t>("free");
      x.queue = r.get<std::uint32_t>("queue");
      x.nbc = r.get<std::uint32_t>("nbc");
      if (x.free > 1u << 20) throw DecodeError("PushReply with " + std::to_string(x.free) + " free requesters");
      const auto n = r.get<std::uint32_t>("count");
      if (n > max_received_ids || (!x.answer && n > 0))
        throw DecodeError("PushReply refusing " + std::to_string(n) + " tasks" + (x.answer ? "" : " without a push"));
      x.refused.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) x.refused.push_back(r.get<std::uint64_t>("task_id"));
      m = std::move(x);
      break;
    }
    case Kind::probe_request: {
      msg::ProbeRequest x{r.get_string("target"), r.get_string("target_key"), r.get<std::uint64_t>("bytes"),
                          r.get<std::uint32_t>("rounds"), r.get_finite("timeout")};
      if (x.bytes > max_tree_probe_bytes || x.rounds == 0 || x.rounds > max_probe_rounds || !(x.timeout > 0) || x.timeout > 3600)
        throw DecodeError("ProbeRequest with " + std::to_string(x.rounds) + " rounds of " + std::to_string(x.bytes) + " bytes");
      m = std::move(x);
      break;
    }
    case Kind::probe_report: {
      msg::ProbeReport x;
      x.node = r.get_string("node");
      x.target = r.get_string("target");
      x.target_name = r.get_string("target_name");
      x.ok = r.get<std::uint8_t>("ok") != 0;
      x.error = r.get_string("error", max_text_bytes);
      x.bandwidth = r.get_finite("bandwidth");
      x.round_trip = r.get_finite("round_trip");
      x.speed = r.get_finite("speed");
      x.cores = r.get<std::uint32_t>("cores");
      if (x.bandwidth < 0 || x.round_trip < 0 || x.speed < 0 || x.cores > 1u << 16)
        throw DecodeError("ProbeReport out of range");
      m = std::move(x);
      break;
    }
    case Kind::capacity: {
      msg::Capacity x;
      x.cores = r.get<std::uint64_t>("cores");
      x.memory = r.get<std::uint64_t>("memory");
      x.disk = r.get<std::uint64_t>("disk");
      const auto n = r.get<std::uint32_t>("app_count");
      if (n == 0 || n > max_apps) throw DecodeError("Capacity for " + std::to_string(n) + " applications");
      for (std::uint32_t i = 0; i < n; ++i) {
        const auto f = r.get<std::uint8_t>("fits");
        if (f > 1) throw DecodeError("Capacity with fits " + std::to_string(f) + ", expected 0 or 1");
        x.fits.push_back(f == 1);
      }
      m = std::move(x);
      break;
    }
    default:
      throw DecodeError("unknown message kind " + std::to_string(raw_kind));
  }
  r.finish();
  return m;
}

}  // namespace treefarm::net
