/// @file fuzz_codec.cpp
/// The codec fuzz target. Input: byte 0 = how many payload frames followed the header frame
/// (taken modulo 3, so 0..2), the rest = the header frame. decode() may only throw
/// DecodeError; whatever it accepts must encode, decode again, and re-encode to the same
/// bytes. Built twice: as libFuzzer's LLVMFuzzerTestOneInput (clang, fuzz_codec) and,
/// with TREEFARM_FUZZ_ENTRY defined to another name, into the corpus replay test.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "runtime/net/Codec.hpp"

#ifndef TREEFARM_FUZZ_ENTRY
#define TREEFARM_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

namespace {

[[noreturn]] void fail(const char* what, const char* detail) {
  std::fprintf(stderr, "fuzz_codec: %s: %s\n", what, detail);
  std::abort();
}

}  // namespace

extern "C" int TREEFARM_FUZZ_ENTRY(const std::uint8_t* data, std::size_t size) {
  using namespace treefarm::net;
  if (size == 0) return 0;
  const std::size_t payload_frames = data[0] % 3;
  const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  Message m;
  try {
    m = decode(frame, payload_frames);
  } catch (const DecodeError&) {
    return 0;  // rejected: the expected outcome for most inputs
  }
  // Accepted: the message must survive a round trip through the codec unchanged.
  std::vector<std::byte> once;
  try {
    once = encode(m);
  } catch (const std::exception& e) {
    fail("a decoded message does not encode", e.what());
  }
  Message again;
  try {
    again = decode(once, payload_frames_for(kind_of(m)));
  } catch (const DecodeError& e) {
    fail("decode(encode(m)) rejected", e.what());
  }
  if (encode(again) != once) fail("re-encoding changed the bytes", kind_name(kind_of(m)));
  return 0;
}
