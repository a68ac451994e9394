#include "tasks/TaskEnvelope.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace treefarm::tasks {

namespace {

constexpr char magic[4] = {'T', 'F', 'E', '1'};

template <class T>
void put(std::vector<std::byte>& out, T v) {
  for (std::size_t i = 0; i < sizeof v; ++i) out.push_back(static_cast<std::byte>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff));
}

void put_bytes(std::vector<std::byte>& out, const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> b) : b_(b) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(b_[at_ + i]) << (8 * i);
    at_ += sizeof(T);
    return static_cast<T>(v);
  }
  std::string text(std::size_t n, const char* what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return s;
  }
  std::span<const std::byte> rest() const { return b_.subspan(at_); }

 private:
  void need(std::size_t n, const char* what) {
    if (n > b_.size() - at_) throw std::invalid_argument(std::string("task input envelope cut short in its ") + what);
  }
  std::span<const std::byte> b_;
  std::size_t at_ = 0;
};

}  // namespace

std::string TaskEnvelope::error() const {
  for (const auto& [k, v] : fields)
    if (k == "!error") return v;
  return {};
}

void write_envelope(const std::vector<model::TaskField>& fields, std::span<const std::byte> input, std::vector<std::byte>& out) {
  out.clear();
  std::size_t size = 8 + input.size();
  for (const auto& [k, v] : fields) size += 6 + k.size() + v.size();
  out.reserve(size);
  for (char c : magic) out.push_back(static_cast<std::byte>(c));
  put<std::uint32_t>(out, static_cast<std::uint32_t>(fields.size()));
  for (const auto& [k, v] : fields) {
    if (k.size() > max_field_key_bytes || v.size() > max_field_value_bytes)
      throw std::invalid_argument("task placeholder {" + k.substr(0, 64) + "} of " + std::to_string(v.size()) +
                                  " bytes: at most " + std::to_string(max_field_value_bytes));
    put<std::uint16_t>(out, static_cast<std::uint16_t>(k.size()));
    put_bytes(out, k);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(v.size()));
    put_bytes(out, v);
  }
  out.insert(out.end(), input.begin(), input.end());
}

TaskEnvelope read_envelope(std::span<const std::byte> payload) {
  if (payload.size() < 8 || std::memcmp(payload.data(), magic, 4) != 0)
    throw std::invalid_argument("a task input without its placeholders (no envelope)");
  Cursor c(payload.subspan(4));
  const auto count = c.get<std::uint32_t>("field count");
  if (count > max_envelope_fields) throw std::invalid_argument("a task input with " + std::to_string(count) + " placeholders");
  TaskEnvelope e;
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto klen = c.get<std::uint16_t>("key length");
    if (klen == 0 || klen > max_field_key_bytes) throw std::invalid_argument("a task placeholder name of " + std::to_string(klen) + " bytes");
    std::string key = c.text(klen, "key");
    const auto vlen = c.get<std::uint32_t>("value length");
    if (vlen > max_field_value_bytes) throw std::invalid_argument("a task placeholder value of " + std::to_string(vlen) + " bytes");
    e.fields.emplace_back(std::move(key), c.text(vlen, "value"));
  }
  e.input = c.rest();
  return e;
}

}  // namespace treefarm::tasks
