/// Replays the codec fuzz corpus (tests/fuzz/corpus/codec) through the fuzz target's own
/// body (fuzz_codec.cpp, compiled here under the name TREEFARM_FUZZ_ENTRY), so every
/// compiler runs what the fuzzer found.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/net/Codec.hpp"
#include "tests/fuzz/FuzzCodec.hpp"

extern "C" int TREEFARM_FUZZ_ENTRY(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;
using treefarm::fuzz::check_codec_input;
using treefarm::fuzz::CodecOutcome;

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(TREEFARM_CODEC_CORPUS))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(CorpusReplay, CorpusIsThere) {
  // Without its seeds the replay below would pass vacuously.
  EXPECT_GE(corpus_files().size(), 20u) << "corpus dir " << TREEFARM_CODEC_CORPUS;
}

TEST(CorpusReplay, EveryInputHasTheOutcomeItsNameSays) {
  // bad-*: written to break one rule of docs/protocol.md, so decode must reject it;
  // valid-*: a well-formed message, so it must be accepted and round-trip; fuzz-*: what the
  // fuzzer found, which only has to keep every property (no CodecPropertyViolated).
  std::size_t valid = 0, bad = 0;
  for (const auto& file : corpus_files()) {
    const std::string name = file.filename().string();
    SCOPED_TRACE(name);
    const auto bytes = read_bytes(file);
    CodecOutcome outcome = CodecOutcome::Rejected;
    try {
      outcome = check_codec_input(bytes.data(), bytes.size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    if (name.starts_with("bad-")) {
      ++bad;
      EXPECT_EQ(outcome, CodecOutcome::Rejected) << "a malformed seed was accepted";
    } else if (name.starts_with("valid-")) {
      ++valid;
      EXPECT_EQ(outcome, CodecOutcome::RoundTrips) << "a well-formed seed was rejected";
    }
  }
  EXPECT_GE(valid, 12u) << "the corpus should hold a valid message of every kind";
  EXPECT_GE(bad, 12u) << "the corpus should hold malformed messages";
}

TEST(CorpusReplay, ValidSeedsAreWhatTheEncoderWrites) {
  // The seeds were written by make_codec_corpus.py from docs/protocol.md, independently of
  // Codec.cpp: the encoder must produce exactly their bytes.
  std::size_t checked = 0;
  for (const auto& file : corpus_files()) {
    if (!file.filename().string().starts_with("valid-")) continue;
    SCOPED_TRACE(file.filename().string());
    const auto bytes = read_bytes(file);
    ASSERT_FALSE(bytes.empty());
    const std::span<const std::byte> frame(reinterpret_cast<const std::byte*>(bytes.data()) + 1, bytes.size() - 1);
    const auto encoded = treefarm::net::encode(treefarm::net::decode(frame, bytes[0] % 3));
    EXPECT_TRUE(std::equal(encoded.begin(), encoded.end(), frame.begin(), frame.end()));
    ++checked;
  }
  EXPECT_GE(checked, 12u);
}

TEST(CorpusReplay, TrivialInputsAreRejected) {
  // libFuzzer starts with the empty input and single bytes: none of them is a message.
  const std::uint8_t one[] = {0};
  EXPECT_EQ(check_codec_input(nullptr, 0), CodecOutcome::Rejected);
  EXPECT_EQ(check_codec_input(one, 1), CodecOutcome::Rejected);
  EXPECT_EQ(TREEFARM_FUZZ_ENTRY(one, 1), 0);  // the entry point returns instead of aborting
}

}  // namespace
