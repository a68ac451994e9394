// CURVE key files and the authorized_keys format.
#include "runtime/zmq/Curve.hpp"

#include <filesystem>
#include <fstream>

#include <map>

#include <gtest/gtest.h>

#include "tests/support/TempDir.hpp"

namespace treefarm::net {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

TEST(Curve, KeyFilesRoundTripAndTheSecretFileIsPrivate) {
  TempDir dir("curve");
  const auto keys = generate_keypair();
  EXPECT_EQ(keys.public_key.size(), 40u);
  EXPECT_EQ(keys.secret_key.size(), 40u);
  write_keypair(dir.path().string(), "w1", keys);
  EXPECT_EQ(load_public_key_file((dir.path() / "w1.key").string()), keys.public_key);
  const auto back = load_secret_key_file((dir.path() / "w1.key_secret").string());
  EXPECT_EQ(back.public_key, keys.public_key);
  EXPECT_EQ(back.secret_key, keys.secret_key);
  EXPECT_EQ(fs::status(dir.path() / "w1.key_secret").permissions() & fs::perms::others_all, fs::perms::none);
  // The public file does not contain the secret.
  std::ifstream f(dir.path() / "w1.key");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(keys.secret_key), std::string::npos);
}

TEST(Curve, AuthorizedKeysAcceptKeysContainingHashAndSkipComments) {
  TempDir dir("curve");
  const std::string with_hash = "0123456789#abcdefghij0123456789#abcdefgh";  // Z85 has '#'
  ASSERT_EQ(with_hash.size(), 40u);
  std::ofstream(dir.path() / "authorized_keys") << "# the tree's workers\n\n  " << with_hash << "  # w1\n"
                                                 << "#commented-out key\n";
  const auto keys = load_authorized_keys((dir.path() / "authorized_keys").string());
  EXPECT_EQ(keys, (std::set<std::string>{with_hash}));
}

TEST(Curve, AuthorizedKeysBindNamesToKeysAndStillReadTheOldForm) {
  TempDir dir("curve");
  const std::string k1 = "0123456789#abcdefghij0123456789#abcdefgh";
  const std::string k2 = "ABCDEFGHIJ0123456789ABCDEFGHIJ0123456789";
  std::ofstream(dir.path() / "authorized_keys") << "w1 " << k1 << "\n" << k2 << "  # w2 (old form: any name)\n";
  std::map<std::string, std::string> names;
  const auto keys = load_authorized_keys((dir.path() / "authorized_keys").string(), &names);
  EXPECT_EQ(keys, (std::set<std::string>{k1, k2}));
  EXPECT_EQ(names, (std::map<std::string, std::string>{{k1, "w1"}}));
  // A key listed twice (e.g. under two names) is an error naming the line.
  std::ofstream(dir.path() / "twice") << "w1 " << k1 << "\nw2 " << k1 << "\n";
  try {
    load_authorized_keys((dir.path() / "twice").string(), &names);
    FAIL() << "accepted one key under two names";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("twice:2"), std::string::npos) << e.what();
  }
}

TEST(Curve, BadKeyFilesAreErrorsNamingTheFileAndLine) {
  TempDir dir("curve");
  std::ofstream(dir.path() / "authorized_keys") << "short-key\n";
  try {
    load_authorized_keys((dir.path() / "authorized_keys").string());
    FAIL() << "accepted a short key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("authorized_keys:1"), std::string::npos) << e.what();
  }
  std::ofstream(dir.path() / "x.key_secret") << "public-key = \"tooshort\"\n";
  EXPECT_THROW(load_secret_key_file((dir.path() / "x.key_secret").string()), std::runtime_error);
  EXPECT_THROW(load_public_key_file((dir.path() / "missing.key").string()), std::runtime_error);
}

}  // namespace
}  // namespace treefarm::net
