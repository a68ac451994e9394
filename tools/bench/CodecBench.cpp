#include "tools/bench/CodecBench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>

namespace treefarm::bench {

namespace {

using Clock = std::chrono::steady_clock;
using net::DecodeError;

/// msgpack's packer writes into any type with write(const char*, size_t).
struct VectorBuffer {
  std::vector<char> bytes;
  void write(const char* p, std::size_t n) { bytes.insert(bytes.end(), p, p + n); }
};

constexpr std::uint32_t task_fields = 4;    // magic, version, kind, task_id
constexpr std::uint32_t result_fields = 10; // magic, version, kind + 7 fields of Result

template <class Fields>
std::vector<char> pack(net::Kind kind, std::uint32_t count, const Fields& fields) {
  VectorBuffer buffer;
  msgpack::packer<VectorBuffer> pk(buffer);
  pk.pack_array(count);
  pk.pack(net::wire_magic);
  pk.pack(net::wire_version);
  pk.pack(static_cast<std::uint16_t>(kind));
  fields(pk);
  return std::move(buffer.bytes);
}

/// The checked fields of one decoded array.
class Fields {
 public:
  Fields(std::span<const char> bytes, net::Kind kind, std::uint32_t count) {
    std::size_t offset = 0;
    try {
      msgpack::unpack(handle_, bytes.data(), bytes.size(), offset);
    } catch (const msgpack::unpack_error& e) {
      throw DecodeError(std::string("not MessagePack: ") + e.what());
    }
    if (offset != bytes.size()) throw DecodeError(std::to_string(bytes.size() - offset) + " unexpected trailing bytes");
    const msgpack::object& o = handle_.get();
    if (o.type != msgpack::type::ARRAY || o.via.array.size != count)
      throw DecodeError("expected an array of " + std::to_string(count) + " fields");
    array_ = o.via.array.ptr;
    if (unsigned_at(0, "magic") != net::wire_magic) throw DecodeError("bad magic: not a treefarm message");
    if (unsigned_at(1, "version") != net::wire_version) throw DecodeError("unknown protocol version");
    if (unsigned_at(2, "kind") != static_cast<std::uint64_t>(kind)) throw DecodeError("unexpected message kind");
  }
  std::uint64_t unsigned_at(std::size_t i, const char* field) const {
    if (array_[i].type != msgpack::type::POSITIVE_INTEGER) throw DecodeError(std::string("field '") + field + "' is not an unsigned integer");
    return array_[i].via.u64;
  }
  /// msgpack-cxx packs a double with an integral value as an integer (smaller): accept both.
  double number_at(std::size_t i, const char* field) const {
    switch (array_[i].type) {
      case msgpack::type::FLOAT64:
      case msgpack::type::FLOAT32: return array_[i].via.f64;
      case msgpack::type::POSITIVE_INTEGER: return static_cast<double>(array_[i].via.u64);
      case msgpack::type::NEGATIVE_INTEGER: return static_cast<double>(array_[i].via.i64);
      default: throw DecodeError(std::string("field '") + field + "' is not a number");
    }
  }
  double finite_at(std::size_t i, const char* field) const {
    const double v = number_at(i, field);
    if (!std::isfinite(v)) throw DecodeError(std::string("field '") + field + "' is not a finite number");
    return v;
  }
  bool bool_at(std::size_t i, const char* field) const {
    if (array_[i].type != msgpack::type::BOOLEAN) throw DecodeError(std::string("field '") + field + "' is not a boolean");
    return array_[i].via.boolean;
  }
  std::string string_at(std::size_t i, const char* field) const {
    if (array_[i].type != msgpack::type::STR) throw DecodeError(std::string("field '") + field + "' is not a string");
    const auto& s = array_[i].via.str;
    if (s.size > net::max_name_bytes) throw DecodeError(std::string("field '") + field + "' is too long");
    return std::string(s.ptr, s.size);
  }

 private:
  msgpack::object_handle handle_;
  const msgpack::object* array_ = nullptr;
};

bool same(const net::msg::Result& a, const net::msg::Result& b) {
  return a.task_id == b.task_id && a.node == b.node && a.compute_seconds == b.compute_seconds &&
         a.queued_seconds == b.queued_seconds && a.checksum == b.checksum && a.failed == b.failed && a.error == b.error;
}

/// ns per call of `step(i)` over `n` calls.
double ns_per_call(std::uint64_t n, const std::function<void(std::uint64_t)>& step) {
  const auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < n; ++i) step(i);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / static_cast<double>(n);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct Figures {
  std::string message, codec;
  double encode_ns = 0, decode_ns = 0;
  std::size_t bytes = 0;
};

std::string fixed(double v, int precision) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

}  // namespace

std::vector<char> msgpack_encode(const net::msg::Task& task) {
  return pack(net::Kind::task, task_fields, [&](auto& pk) { pk.pack(task.task_id); });
}

std::vector<char> msgpack_encode(const net::msg::Result& r) {
  if (r.node.size() > net::max_name_bytes) throw std::invalid_argument("node name too long for the wire");
  const std::string error = r.error.size() > net::max_name_bytes ? r.error.substr(0, net::max_name_bytes) : r.error;
  return pack(net::Kind::result, result_fields, [&](auto& pk) {
    pk.pack(r.task_id);
    pk.pack(r.node);
    pk.pack(r.compute_seconds);
    pk.pack(r.queued_seconds);
    pk.pack(r.checksum);
    pk.pack(r.failed);
    pk.pack(error);
  });
}

net::msg::Task msgpack_decode_task(std::span<const char> bytes) {
  const Fields f(bytes, net::Kind::task, task_fields);
  return net::msg::Task{f.unsigned_at(3, "task_id")};
}

net::msg::Result msgpack_decode_result(std::span<const char> bytes) {
  const Fields f(bytes, net::Kind::result, result_fields);
  net::msg::Result r;
  r.task_id = f.unsigned_at(3, "task_id");
  r.node = f.string_at(4, "node");
  r.compute_seconds = f.finite_at(5, "compute_seconds");
  r.queued_seconds = f.finite_at(6, "queued_seconds");
  r.checksum = f.number_at(7, "checksum");  // may be NaN, as in ours: the master judges
  r.failed = f.bool_at(8, "failed");
  r.error = f.string_at(9, "error");
  return r;
}

int bench_codec(std::ostream& out, const CodecBenchOptions& o) {
  if (o.messages == 0) throw std::invalid_argument("bench codec: messages is 0, expected at least 1");
  if (o.rounds == 0) throw std::invalid_argument("bench codec: rounds is 0, expected at least 1");

  // Typical messages of the per-task path: a Task header (its input bytes travel in a
  // separate zero-copy frame in both cases) and a Result with a node name and no error.
  const net::msg::Task task{123456789};
  net::msg::Result result;
  result.task_id = 123456789;
  result.node = "worker-17";
  result.compute_seconds = 0.0123;
  result.queued_seconds = 0.0004;
  result.checksum = 5.25e6;

  const auto ours_task = net::encode(net::Message{task});
  const auto ours_result = net::encode(net::Message{result});
  const auto mp_task = msgpack_encode(task);
  const auto mp_result = msgpack_encode(result);
  if (std::get<net::msg::Task>(net::decode(ours_task, 1)).task_id != task.task_id ||
      msgpack_decode_task(mp_task).task_id != task.task_id ||
      !same(std::get<net::msg::Result>(net::decode(ours_result, 0)), result) ||
      !same(msgpack_decode_result(mp_result), result))
    throw std::runtime_error("bench codec: a decoded message differs from the encoded one");

  // Each measurement: n encodes, then n decodes; sinks keep the work observable.
  std::uint64_t sink = 0;
  struct Side {
    std::string message, codec;
    std::size_t bytes;
    std::function<void(std::uint64_t)> encode, decode;
  };
  std::vector<Side> sides = {
      {"Task", "treefarm", ours_task.size(),
       [&](std::uint64_t i) { sink += net::encode(net::Message{net::msg::Task{i}}).size(); },
       [&](std::uint64_t) { sink += std::get<net::msg::Task>(net::decode(ours_task, 1)).task_id; }},
      {"Task", "msgpack", mp_task.size(),
       [&](std::uint64_t i) { sink += msgpack_encode(net::msg::Task{i}).size(); },
       [&](std::uint64_t) { sink += msgpack_decode_task(mp_task).task_id; }},
      {"Result", "treefarm", ours_result.size(),
       [&](std::uint64_t i) {
         result.task_id = i;
         sink += net::encode(net::Message{result}).size();
       },
       [&](std::uint64_t) { sink += std::get<net::msg::Result>(net::decode(ours_result, 0)).node.size(); }},
      {"Result", "msgpack", mp_result.size(),
       [&](std::uint64_t i) {
         result.task_id = i;
         sink += msgpack_encode(result).size();
       },
       [&](std::uint64_t) { sink += msgpack_decode_result(mp_result).node.size(); }},
  };
  std::vector<std::vector<double>> enc(sides.size()), dec(sides.size());
  for (std::uint32_t round = 0; round < o.rounds; ++round)
    for (std::size_t k = 0; k < sides.size(); ++k) {
      // Alternate which codec of a message goes first, so drift hits both alike.
      const std::size_t s = round % 2 == 0 ? k : k ^ 1u;
      enc[s].push_back(ns_per_call(o.messages, sides[s].encode));
      dec[s].push_back(ns_per_call(o.messages, sides[s].decode));
    }

  std::vector<Figures> figures;
  for (std::size_t s = 0; s < sides.size(); ++s)
    figures.push_back({sides[s].message, sides[s].codec, median(enc[s]), median(dec[s]), sides[s].bytes});

  if (o.json) {
    nlohmann::json j;
    j["benchmark"] = "codec";
    j["messages"] = o.messages;
    j["rounds"] = o.rounds;
    j["sink"] = sink;
    for (const auto& f : figures)
      j["results"].push_back({{"message", f.message},
                              {"codec", f.codec},
                              {"encode_ns", f.encode_ns},
                              {"decode_ns", f.decode_ns},
                              {"bytes", f.bytes}});
    out << j.dump(2) << "\n";
    return 0;
  }
  out << "bench codec: header frames of the per-task path, " << o.messages << " encodes and " << o.messages
      << " checked decodes per measurement, median of " << o.rounds << " rounds (checksum " << sink % 1000 << ")\n";
  out << std::left << std::setw(8) << "message" << std::setw(10) << "codec" << std::right << std::setw(12)
      << "encode ns" << std::setw(12) << "decode ns" << std::setw(8) << "bytes" << "\n";
  for (const auto& f : figures)
    out << std::left << std::setw(8) << f.message << std::setw(10) << f.codec << std::right << std::setw(12)
        << fixed(f.encode_ns, 1) << std::setw(12) << fixed(f.decode_ns, 1) << std::setw(8) << f.bytes << "\n";
  for (std::size_t s = 0; s + 1 < figures.size(); s += 2)
    out << figures[s].message << ": msgpack / treefarm = " << fixed(figures[s + 1].encode_ns / figures[s].encode_ns, 2)
        << "x encode, " << fixed(figures[s + 1].decode_ns / figures[s].decode_ns, 2) << "x decode, "
        << fixed(static_cast<double>(figures[s + 1].bytes) / static_cast<double>(figures[s].bytes), 2) << "x bytes\n";
  return 0;
}

}  // namespace treefarm::bench
