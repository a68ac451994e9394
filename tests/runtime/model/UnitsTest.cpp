#include "runtime/model/Units.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace treefarm::model {
namespace {

struct Case {
  const char* text;
  double expected;
};

TEST(Units, Speeds) {
  for (const Case& c : {Case{"2Gf", 2e9}, Case{"100Mf", 1e8}, Case{"1.5kf", 1500.0},
                        Case{"22.151Mf", 22.151e6}, Case{"2Gflops", 2e9}, Case{"7f", 7.0},
                        Case{"3flops", 3.0}, Case{"1Tf", 1e12}, Case{" 2 Gf ", 2e9},
                        Case{"1e3Mf", 1e9}}) {
    EXPECT_DOUBLE_EQ(parse_speed(c.text), c.expected) << c.text;
  }
}

TEST(Units, Flops) {
  EXPECT_DOUBLE_EQ(parse_flops("2Gf"), 2e9);
  EXPECT_DOUBLE_EQ(parse_flops("1.5Mflops"), 1.5e6);
}

TEST(Units, Bandwidths) {
  for (const Case& c : {Case{"125MBps", 125e6}, Case{"1Gbps", 125e6}, Case{"100Mbps", 12.5e6},
                        Case{"110kbps", 13750.0}, Case{"1KiBps", 1024.0},
                        Case{"2MiBps", 2.0 * 1024 * 1024}, Case{"1GiBps", 1073741824.0},
                        Case{"8bps", 1.0}, Case{"10Bps", 10.0}}) {
    EXPECT_DOUBLE_EQ(parse_bandwidth(c.text), c.expected) << c.text;
  }
}

TEST(Units, Times) {
  for (const Case& c : {Case{"50us", 50e-6}, Case{"1ms", 1e-3}, Case{"2s", 2.0},
                        Case{"10ns", 10e-9}, Case{"1.5m", 90.0}, Case{"2h", 7200.0}}) {
    EXPECT_DOUBLE_EQ(parse_time(c.text), c.expected) << c.text;
  }
}

TEST(Units, Sizes) {
  EXPECT_EQ(parse_size("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_size("1GB"), 1'000'000'000ull);
  EXPECT_EQ(parse_size("4KiB"), 4096ull);
  EXPECT_EQ(parse_size("100B"), 100ull);
  EXPECT_EQ(parse_size("1.5KiB"), 1536ull);
  EXPECT_EQ(parse_size("2kB"), 2000ull);
}

std::string error_of(double (*parse)(std::string_view), const char* text) {
  try {
    parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Units, RejectsBadText) {
  // Case matters: b is a bit, B a byte; "MF" and "Mbs" are not units.
  for (const char* bad : {"", "Gf", "2", "2GF", "2 gf", "-1Gf", "2Gbps", "inf f", "2Gf2"})
    EXPECT_THROW(parse_speed(bad), std::invalid_argument) << bad;
  for (const char* bad : {"125MBPS", "1Gb", "1GBs", "1 Mbs", "12", "1mBps", "-5MBps"})
    EXPECT_THROW(parse_bandwidth(bad), std::invalid_argument) << bad;
  for (const char* bad : {"1", "1S", "1min", "2d", "1ps", "1Ms"})
    EXPECT_THROW(parse_time(bad), std::invalid_argument) << bad;
  for (const char* bad : {"512Mib", "1Gb", "0.5B", "12", "1KB", "1e30B"})
    EXPECT_THROW(parse_size(bad), std::invalid_argument) << bad;
}

TEST(Units, MessagesSayWhatWasWrongAndWhatWasExpected) {
  const std::string unknown = error_of(parse_bandwidth, "125MBPS");
  EXPECT_NE(unknown.find("'MBPS'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("Bps"), std::string::npos) << unknown;
  const std::string no_unit = error_of(parse_speed, "12");
  EXPECT_NE(no_unit.find("no unit"), std::string::npos) << no_unit;
  EXPECT_NE(no_unit.find("2Gf"), std::string::npos) << no_unit;
  const std::string not_number = error_of(parse_time, "fast");
  EXPECT_NE(not_number.find("number"), std::string::npos) << not_number;
  try {
    parse_size("1Gb");
    ADD_FAILURE() << "1Gb accepted as a size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bits"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace treefarm::model
