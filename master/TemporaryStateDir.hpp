#pragma once
/// @file TemporaryStateDir.hpp
/// The state folder of a served master started without --state-dir (docs/serve.md): a new
/// folder under $TMPDIR (else /tmp), removed when the master ends unless experiments are
/// still queued or running in it; then it is kept and its path printed, so that
/// `treefarm-master --serve --state-dir PATH` can take them up.

#include <filesystem>

#include "runtime/process/ScratchDir.hpp"

namespace treefarm::master {

class TemporaryStateDir {
 public:
  /// Makes $TMPDIR/treefarm-serve-XXXXXX (mode 0700). @throws std::runtime_error.
  TemporaryStateDir();
  ~TemporaryStateDir();  ///< Removes it, or keeps it (saying so on stderr) if experiments wait in it.
  TemporaryStateDir(const TemporaryStateDir&) = delete;
  TemporaryStateDir& operator=(const TemporaryStateDir&) = delete;

  const std::filesystem::path& path() const { return dir_.path(); }

 private:
  process::ScratchDir dir_{"serve"};
};

}  // namespace treefarm::master
