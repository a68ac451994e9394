#include "runtime/dashboard/Address.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace treefarm::dashboard;

TEST(Address, EmptyIsTheLoopbackDefault) {
  const auto a = parse_address("");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8787);
}

TEST(Address, PortAloneHostAndPortAndBracketedIpv6) {
  EXPECT_EQ(parse_address("9000").host, "127.0.0.1");
  EXPECT_EQ(parse_address("9000").port, 9000);
  const auto a = parse_address("0.0.0.0:0");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 0);
  const auto b = parse_address("[::1]:8080");
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.port, 8080);
  EXPECT_EQ(to_string(b), "[::1]:8080");
  EXPECT_EQ(to_string(a), "0.0.0.0:0");
}

TEST(Address, BadTextIsRefusedWithWhatWasExpected) {
  for (const char* bad : {"host:", ":80", "127.0.0.1:99999", "127.0.0.1:8x", "::1:80", "[::1]80", "abc"}) {
    try {
      (void)parse_address(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("HOST:PORT"), std::string::npos) << e.what();
    }
  }
}

TEST(Address, OnlyLoopbackAddressesAreLoopback) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.3.2.1"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("192.168.1.2"));
  EXPECT_FALSE(is_loopback_host("127.example.org"));
  EXPECT_FALSE(is_loopback_host("::"));
}

TEST(Address, TheShapeOfAnAddressIsAColonOrDigits) {
  // Taken as the value (a wrong one is then refused, naming it): a ':' or all digits.
  for (const char* yes : {"9000", "0", "127.0.0.1:0", "[::1]:8080", "host:99999", "127.0.0.1:notaport", "host:"})
    EXPECT_TRUE(looks_like_address(yes)) << yes;
  // Left for what follows the option: a file, a program, another option.
  for (const char* no : {"exp.toml", "examples/quickstart.toml", "", "8080x", "--quiet", "-q:1"})
    EXPECT_FALSE(looks_like_address(no)) << no;
}
