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
#include <vector>

#include <gtest/gtest.h>

#include "runtime/net/Codec.hpp"

extern "C" int TREEFARM_FUZZ_ENTRY(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

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

TEST(CorpusReplay, EveryInputIsHandledWithoutCrash) {
  std::size_t accepted = 0;
  for (const auto& file : corpus_files()) {
    SCOPED_TRACE(file.filename().string());
    const auto bytes = read_bytes(file);
    EXPECT_EQ(TREEFARM_FUZZ_ENTRY(bytes.data(), bytes.size()), 0);
    // Count how many seeds are valid messages, so the corpus keeps covering the happy paths.
    if (!bytes.empty()) {
      try {
        (void)treefarm::net::decode(std::span(reinterpret_cast<const std::byte*>(bytes.data()) + 1, bytes.size() - 1),
                                    bytes[0] % 3);
        ++accepted;
      } catch (const treefarm::net::DecodeError&) {
      }
    }
  }
  EXPECT_GE(accepted, 12u) << "the corpus should hold a valid message of every kind";
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

TEST(CorpusReplay, EntryRejectsQuietly) {
  // The body itself must not abort on the trivial inputs libFuzzer starts with.
  const std::uint8_t one[] = {0};
  EXPECT_EQ(TREEFARM_FUZZ_ENTRY(nullptr, 0), 0);
  EXPECT_EQ(TREEFARM_FUZZ_ENTRY(one, 1), 0);
}

}  // namespace
