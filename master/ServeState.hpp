#pragma once
/// @file ServeState.hpp
/// What a served master keeps under its `--state-dir` so that a restart takes it up
/// (docs/serve.md, "Restarts"): per experiment DIR/job-N/job.json — the submission
/// (experiment text, policy, calibration, owner) and its state, "queued", "running" or
/// "done" (with the "done" message its submitter gets) — written atomically (temporary
/// file, fsync, rename, fsync of the directory). The running experiment's journal is its
/// own DIR/job-N/out/journal.tsv (docs/fault-tolerance.md), from which it resumes.

#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

namespace treefarm::master {

/// One submission to a served master.
struct Job {
  std::uint64_t id = 0;
  std::string client;  ///< routing identity of the submitter ("" after a restart, until it watches again)
  std::string owner;   ///< who may cancel it besides an admin (Peer::owner)
  std::string name;    ///< the experiment file's name, as submitted
  std::string text;    ///< the experiment (TOML), as submitted
  std::string policy;  ///< "" = the experiment's
  std::string calibration;  ///< calibration file text ("" = none)
  /// "" = no calibration here; "first" = calibrate the tree in place, then run with it;
  /// "only" = calibrate and answer with the calibration, no run (docs/serve.md).
  std::string calibrate;
  bool live_tree = false;  ///< the experiment had no [[node]]: it runs on the tree as it is
  bool outputs = false;    ///< the client takes the output files (submit --out)
  double submitted = 0;    ///< seconds since the server started
  bool resume = false;     ///< it was running when the master stopped: resume from its journal
};

/// The jobs of a state directory.
class JobStore {
 public:
  /// Creates `dir` (mode 0700; an existing one is set to 0700). Throws
  /// std::filesystem::filesystem_error naming it if that fails.
  explicit JobStore(std::filesystem::path dir);
  const std::filesystem::path& dir() const { return dir_; }
  /// DIR/job-N.
  std::filesystem::path job_dir(std::uint64_t id) const;

  /// Records `job` in `state` ("queued" or "running"); throws std::runtime_error naming the
  /// file if it cannot be written whole.
  void save(const Job& job, const std::string& state) const;
  /// Records `job` as done, with the message its submitter gets.
  void save_done(const Job& job, const nlohmann::json& done) const;
  /// The "done" message of experiment `id` and its owner, if it ended; nullopt otherwise.
  std::optional<std::pair<nlohmann::json, std::string>> done_of(std::uint64_t id) const;

  /// What a restart takes up: the experiments not done, in id order, the one that was
  /// running first (Job::resume set), and the next id to give. A job.json that cannot be
  /// read is skipped with a warning naming it.
  struct Restored {
    std::deque<Job> queue;
    std::uint64_t next_id = 1;
  };
  Restored restore() const;

 private:
  std::filesystem::path dir_;
};

/// The input files a submission brought (`inputs`: [{path, bytes}], one frame each, in
/// order), written under the job's directory `dir`; each path relative and inside it.
/// Throws std::invalid_argument for a path that leaves it or a frame of another size.
void write_inputs(const std::filesystem::path& dir, const nlohmann::json& inputs, std::span<zmq::message_t> files);

}  // namespace treefarm::master
