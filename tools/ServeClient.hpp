#pragma once
/// @file ServeClient.hpp
/// The client side of a served tree's submit/status channel (master/Server.hpp,
/// docs/serve.md): `treefarm submit`, `treefarm status` and `treefarm compare --to`.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace treefarm::tools {

/// The served master's limits on its submit channel (bytes; master/Server.cpp has the same).
inline constexpr std::uint64_t max_experiment_bytes = 4u << 20;
inline constexpr std::uint64_t max_frame_bytes = 16u << 20;
inline constexpr std::size_t max_input_files = 1024;
inline constexpr std::uint64_t max_input_bytes = 64u << 20;

/// `tcp://HOST:PORT` (or `ipc://PATH`) as given, `HOST:PORT` with `tcp://` added; throws
/// std::invalid_argument saying the expected form for anything else.
std::string normalized_endpoint(const std::string& endpoint);

/// How to reach a served master.
struct ServeEndpoint {
  std::string endpoint;     ///< tcp://HOST:PORT of its --bind channel
  std::string curve_secret; ///< this client's CURVE secret key file ("" = no CURVE)
  std::string server_key;   ///< the master's public key file (with curve_secret)
  bool insecure = false;    ///< allow an unencrypted non-loopback endpoint
};

/// One submission.
struct Submission {
  std::string experiment;   ///< experiment file (TOML); sent as text
  /// The experiment's text when it was built, not read (submit without a file): then
  /// `experiment` only names it, and its folder is where its relative paths resolve.
  std::string experiment_text;
  std::string policy;       ///< overrides [run] policy ("" = keep)
  std::string calibration;  ///< calibration file sent along ("" = none): the LP prediction
  /// Calibrate on the served tree (docs/serve.md): `first` = measure the tree in place,
  /// then run with that calibration (the LP prediction beside the measured); `only` =
  /// measure and return the calibration, no run. Not with `calibration`.
  enum class Calibrate { no, first, only } calibrate = Calibrate::no;
  /// Where a calibration made on the served tree is written ("" = out_dir/calibration.json,
  /// or nowhere without out_dir); it is also in the "done" message's `calibration`.
  std::string calibration_out;
  std::string out_dir;      ///< results.json and outputs/APP/ (command output files) go here ("" = not written)
  double timeout = 0;       ///< seconds to wait for the end (0 = no limit)
  /// Each message of the server ("queued", "started", "done") as it arrives.
  std::function<void(const nlohmann::json&)> on_message;
};

class ServeClient {
 public:
  /// Throws std::invalid_argument for unsafe or incomplete settings (key files named).
  explicit ServeClient(const ServeEndpoint& endpoint);
  ~ServeClient();
  ServeClient(const ServeClient&) = delete;
  ServeClient& operator=(const ServeClient&) = delete;

  /// The server's status (master/Server.hpp). Throws std::runtime_error if no answer came
  /// within `timeout` seconds.
  nlohmann::json status(double timeout = 10);
  /// Submits and waits for the end: returns the server's "done" message (its `results`
  /// also written to out_dir/results.json, the output files of command applications with
  /// output_file to out_dir/outputs/APP/, docs/command-tasks.md). Throws std::runtime_error for a refusal (the
  /// server's message), a timeout or an interruption (`stop` set).
  ///
  /// When `stop` is set (Ctrl-C) after the server queued the experiment, the client
  /// cancels it (cancel()) and waits up to 60 s more for its "done" (results.json with
  /// `"cancelled": true` if it was running); before that it throws at once.
  nlohmann::json submit(const Submission& submission, const std::atomic<bool>* stop = nullptr);
  /// Cancels experiment `id` (docs/serve.md): a queued one leaves the queue, a running one
  /// ends (the tree is reset and stays). Returns the server's "cancelled" answer
  /// ({id, was: "queued" | "running"}). Throws std::runtime_error with the server's message
  /// if there is no such experiment, or if no answer came within `timeout` seconds.
  nlohmann::json cancel(std::uint64_t id, double timeout = 10);

 private:
  nlohmann::json receive(double timeout, const std::atomic<bool>* stop);
  /// Fetches the `count` output files of experiment `id` chunk by chunk into
  /// out_dir/outputs/APP/ (each written as NAME.part, renamed when complete).
  void fetch_outputs(const std::string& out_dir, std::uint64_t id, std::uint64_t count);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace treefarm::tools
