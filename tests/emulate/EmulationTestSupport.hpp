#pragma once
// Helpers shared by the emulation tests: the skip rule, unique prefixes and a check
// for anything left behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"
#include "tools/emulate/Emulate.hpp"

namespace treefarm::emulate::testing {

/// "" when emulation works here, else why not (cached).
const std::string& unavailable_reason();

/// A "tf" + 4 hex prefix that nothing uses now.
std::string fresh_prefix();

/// Everything named PREFIX-* that still exists: namespaces, root-namespace links,
/// qdiscs, control groups, the state file. Empty = clean.
std::vector<std::string> leftovers(const std::string& prefix);

/// Parses an experiment from text.
model::Experiment experiment(const std::string& toml);

using test_support::TempDir;

/// The setup of one `treefarm emulate` test: a temporary directory holding the experiment
/// `toml` as star.toml, a fresh prefix, and emulate_command's options for them (the
/// binaries of this build, output in DIR/out, `timeout` seconds, quiet, warn-level logs).
struct EmulationRun {
  EmulationRun(const std::string& toml, double timeout);
  TempDir dir;
  std::string file;    ///< DIR/star.toml
  std::string prefix;  ///< fresh_prefix()
  EmulateOptions options;
  std::filesystem::path out() const { return dir.path() / "out"; }
};

}  // namespace treefarm::emulate::testing

#define SKIP_UNLESS_EMULATION()                                                                   \
  do {                                                                                            \
    if (!::treefarm::emulate::testing::unavailable_reason().empty())                               \
      GTEST_SKIP() << "emulation tests skipped: " << ::treefarm::emulate::testing::unavailable_reason(); \
  } while (0)
