/// @file fuzz_codec.cpp
/// The codec fuzz target. Input: byte 0 = how many payload frames followed the header frame
/// (taken modulo 3, so 0..2), the rest = the header frame. decode() may only throw
/// DecodeError; whatever it accepts must encode, decode again, and re-encode to the same
/// bytes. check_codec_input() checks that and says whether the input was accepted; the
/// entry point aborts on a violated property (a libFuzzer crash). Built twice: as
/// libFuzzer's LLVMFuzzerTestOneInput (clang, fuzz_codec) and, with TREEFARM_FUZZ_ENTRY
/// defined to another name, into the corpus replay test, which calls check_codec_input().

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/net/Codec.hpp"
#include "tests/fuzz/FuzzCodec.hpp"

#ifndef TREEFARM_FUZZ_ENTRY
#define TREEFARM_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

namespace treefarm::fuzz {

CodecOutcome check_codec_input(const std::uint8_t* data, std::size_t size) {
  using namespace treefarm::net;
  if (size == 0) return CodecOutcome::Rejected;
  const std::size_t payload_frames = data[0] % 3;
  const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  Message m;
  try {
    m = decode(frame, payload_frames);
  } catch (const DecodeError&) {
    return CodecOutcome::Rejected;  // the expected outcome for most inputs
  }
  // Accepted: the message must survive a round trip through the codec unchanged.
  std::vector<std::byte> once;
  try {
    once = encode(m);
  } catch (const std::exception& e) {
    throw CodecPropertyViolated(std::string("a decoded message does not encode: ") + e.what());
  }
  Message again;
  try {
    again = decode(once, payload_frames_of(m));
  } catch (const DecodeError& e) {
    throw CodecPropertyViolated(std::string("decode(encode(m)) rejected: ") + e.what());
  }
  if (encode(again) != once)
    throw CodecPropertyViolated(std::string("re-encoding changed the bytes: ") + kind_name(kind_of(m)));
  return CodecOutcome::RoundTrips;
}

}  // namespace treefarm::fuzz

extern "C" int TREEFARM_FUZZ_ENTRY(const std::uint8_t* data, std::size_t size) {
  try {
    (void)treefarm::fuzz::check_codec_input(data, size);
  } catch (const treefarm::fuzz::CodecPropertyViolated& e) {
    std::fprintf(stderr, "fuzz_codec: %s\n", e.what());
    std::abort();  // what libFuzzer reports as a crash, with this input saved
  }
  return 0;
}
