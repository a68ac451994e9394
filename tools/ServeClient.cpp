#include "tools/ServeClient.hpp"

#include "runtime/model/BagSource.hpp"

#include <atomic>
#include <chrono>
#include <optional>
#include <cstring>
#include <filesystem>
#include <set>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/model/ExperimentFile.hpp"
#include "runtime/zmq/Curve.hpp"
#include "runtime/zmq/Wire.hpp"

namespace treefarm::tools {

namespace {
std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(std::string("cannot read the ") + what + " " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

/// The input files of the experiment's command applications that lie inside its folder:
/// (path relative to the folder, as the served master writes it beside its copy; the file
/// here). An input_file elsewhere (absolute, or outside the folder) is not sent: it must
/// exist at that path on the master. A file this client cannot parse is sent as it is (the
/// master names its mistakes).
static std::vector<std::pair<std::string, std::filesystem::path>> input_files_of(const std::string& experiment,
                                                                                  const std::string& text) {
  std::vector<std::pair<std::string, std::filesystem::path>> out;
  model::Experiment ex;
  try {
    // As the served master reads it: an experiment without [[node]] tables runs on the
    // live tree.
    ex = model::parse_experiment_nodes_optional(text, experiment);
  } catch (const model::InputTooLarge&) {
    throw;  // the file is here and too large for any master: say so, naming it
  } catch (const std::exception&) {
    return out;  // the master reads it (paths that exist only there) and answers
  }
  const auto folder = std::filesystem::absolute(experiment).parent_path().lexically_normal();
  std::set<std::string> seen;
  const auto add = [&](const std::string& path) {
    const auto file = std::filesystem::absolute(path).lexically_normal();
    const auto rel = file.lexically_relative(folder);
    if (rel.empty() || *rel.begin() == "..") return;
    if (seen.insert(rel.string()).second) out.emplace_back(rel.string(), file);
  };
  for (const auto& app : ex.apps) {
    if (!app.input_file.empty()) add(app.input_file);
    if (app.bag && app.bag->form() == model::BagSource::Form::files)  // a bag's files travel with it
      for (const auto& path : app.bag->paths()) add(path);
    if (app.bag && app.bag->form() == model::BagSource::Form::lines) add(app.bag->lines_file());
  }
  return out;
}

struct ServeClient::Impl {
  zmq::context_t ctx{1};
  zmq::socket_t socket{ctx, zmq::socket_type::dealer};
  zmq::socket_t monitor{ctx, zmq::socket_type::pair};  ///< the connection's events (refused, handshake, closed)
  zmq::message_t attached;  ///< the second frame of the last message received (an output chunk)
  std::string endpoint;
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
  bool refused = false;     ///< a connection attempt was refused (nothing listens there)
  bool handshook = false;   ///< the ZeroMQ handshake succeeded once
  bool answered = false;    ///< the server answered once
  std::chrono::steady_clock::time_point handshook_at;
  /// While a submission waits for its end: the "watch" request sent again on every new
  /// connection, so that a served master restarted with its --state-dir answers here.
  std::string watch_request;
  std::optional<std::chrono::steady_clock::time_point> lost_at;  ///< connection lost while watching
  static constexpr double reconnect_wait = 120;  ///< seconds a lost master may take to come back

  /// Stops the monitor before the socket closes: libzmq blocks on a monitor nobody reads.
  /// Nothing waits to be sent at the end (an unsent request to a dead endpoint would hold
  /// the exit for the socket's linger).
  ~Impl() {
    (void)zmq_socket_monitor(static_cast<void*>(socket), nullptr, 0);
    socket.set(zmq::sockopt::linger, 0);
  }

  /// Reads the connection's events; throws std::runtime_error saying what is wrong with
  /// the endpoint: refused, not a ZeroMQ peer, a refused key, or closed by the server.
  void check_connection() {
    zmq::message_t event;
    while (monitor.recv(event, zmq::recv_flags::dontwait)) {
      std::uint16_t id = 0;
      if (event.size() >= 2) std::memcpy(&id, event.data(), 2);
      while (event.more()) (void)monitor.recv(event, zmq::recv_flags::none);
      if (id == ZMQ_EVENT_CONNECT_RETRIED && !handshook) refused = true;
      if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        if (lost_at && !watch_request.empty()) socket.send(zmq::buffer(watch_request), zmq::send_flags::dontwait);
        lost_at.reset();
        handshook = true;
        refused = false;
        handshook_at = std::chrono::steady_clock::now();
      }
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        throw std::runtime_error("the served master at " + endpoint + " refused this client's CURVE key (is it in the "
                                 "master's authorized_keys?)");
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL || id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        throw std::runtime_error("the handshake with " + endpoint + " failed: not a treefarm submit channel, or CURVE "
                                 "on one side only (--curve-secret and --server-key as the master's --bind needs)");
      if (id == ZMQ_EVENT_DISCONNECTED && handshook && !watch_request.empty()) {
        if (!lost_at) lost_at = std::chrono::steady_clock::now();
        continue;  // a restart of the master takes the experiment up: wait for it
      }
      if (id == ZMQ_EVENT_DISCONNECTED && handshook)
        throw std::runtime_error("the served master at " + endpoint + " closed the connection (it stopped, or refused "
                                 "a message larger than its limit of 16 MiB per frame)");
    }
    const auto now = std::chrono::steady_clock::now();
    if (lost_at && now - *lost_at > std::chrono::duration<double>(reconnect_wait))
      throw std::runtime_error("the served master at " + endpoint + " went away " + std::to_string(static_cast<int>(reconnect_wait)) +
                               " s ago and has not come back; its experiment is taken up if it is restarted with the "
                               "same --state-dir (treefarm status --to " + endpoint + ")");
    if (refused && now - opened > std::chrono::milliseconds(1000))
      throw std::runtime_error("connection refused at " + endpoint + ": nothing listens there (treefarm-master --serve "
                               "--bind ENDPOINT gives the endpoint; --bind-file writes it)");
    if (handshook && !answered && now - handshook_at > std::chrono::seconds(5))
      throw std::runtime_error("connected to " + endpoint + " but no answer within 5 s: not a treefarm submit channel "
                               "(workers join the master's --listen endpoint; submissions go to its --bind endpoint)");
  }
};

namespace {
/// The message of a FileError without its "FILE:LINE: field 'F': " prefix.
std::string reason_of(const std::string& what, const std::string& file, int line, const std::string& field) {
  const std::string prefix = model::FileError(file, line, field, "").what();
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

/// A name the server sent for a directory or file under --out: one plain path component.
bool plain_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}
}  // namespace

std::string normalized_endpoint(const std::string& endpoint) {
  static const std::regex host_port(R"(^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}$)");
  static const std::regex with_scheme(R"(^(tcp://.+:([0-9]{1,5}|\*)|ipc://.+)$)");
  if (std::regex_match(endpoint, with_scheme)) return endpoint;
  if (std::regex_match(endpoint, host_port)) return "tcp://" + endpoint;
  throw cli_support::UsageError("'" + endpoint + "': expected tcp://HOST:PORT (or HOST:PORT), as treefarm-master --serve "
                              "prints it and --bind-file writes it");
}

ServeClient::ServeClient(const ServeEndpoint& given) : impl_(std::make_unique<Impl>()) {
  if (given.endpoint.empty()) throw cli_support::UsageError("--to: the served master's channel endpoint is needed (tcp://HOST:PORT)");
  ServeEndpoint e = given;
  e.endpoint = normalized_endpoint(e.endpoint);
  impl_->endpoint = e.endpoint;
  net::configure_socket(impl_->socket, false);
  impl_->socket.set(zmq::sockopt::handshake_ivl, 1500);  // ms: a peer that never completes the handshake
  impl_->socket.set(zmq::sockopt::rcvhwm, 64);  // the server's answers: small, and chunks asked one by one
  if (!e.curve_secret.empty()) {
    if (e.server_key.empty()) throw cli_support::UsageError("--curve-secret needs --server-key (the master's public key file)");
    net::CurveConfig c;
    c.enabled = true;
    c.own = cli_support::load_input([&] { return net::load_secret_key_file(e.curve_secret); });
    c.parent_public_key = cli_support::load_input([&] { return net::load_public_key_file(e.server_key); });
    net::apply_curve_client(impl_->socket, c);
  } else if (!net::is_loopback_endpoint(e.endpoint) && !e.insecure) {
    throw cli_support::UsageError("refusing an unencrypted channel to " + e.endpoint +
                                ": give --curve-secret and --server-key, or --insecure");
  }
  static std::atomic<int> monitors{0};
  const std::string monitor = "inproc://serve-client-monitor-" + std::to_string(monitors++);
  if (zmq_socket_monitor(static_cast<void*>(impl_->socket), monitor.c_str(),
                         ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
    throw zmq::error_t();
  impl_->monitor.connect(monitor);
  impl_->socket.connect(e.endpoint);
}

ServeClient::~ServeClient() = default;

nlohmann::json ServeClient::receive(double timeout, const std::atomic<bool>* stop) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout > 0 ? timeout : 1e9);
  while (std::chrono::steady_clock::now() < until) {
    if (stop && stop->load()) throw cli_support::Interrupted("interrupted (the experiment goes on on the served tree)");
    zmq::pollitem_t items[2] = {{static_cast<void*>(impl_->socket), 0, ZMQ_POLLIN, 0},
                                {static_cast<void*>(impl_->monitor), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(100));
    } catch (const zmq::error_t& err) {
      if (err.num() == EINTR) continue;
      throw;
    }
    if (!(items[0].revents & ZMQ_POLLIN)) {
      impl_->check_connection();
      continue;
    }
    zmq::message_t frame;
    if (!impl_->socket.recv(frame, zmq::recv_flags::dontwait)) continue;
    impl_->answered = true;
    impl_->attached = zmq::message_t();
    if (frame.more()) {  // an output chunk follows its JSON header; anything more is refused
      (void)impl_->socket.recv(impl_->attached, zmq::recv_flags::none);
      if (impl_->attached.more()) throw std::runtime_error("the server sent a message of more than two frames");
    }
    auto j = nlohmann::json::parse(frame.to_string_view(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("the server sent something that is not a JSON object");
    if (j.value("type", "") == "error") {
      const auto message = j.value("message", std::string("?"));
      if (j.contains("file") && j["file"].is_string())  // a bad experiment or calibration file: exit code 3
        throw model::FileError(j["file"].get<std::string>(), j.value("line", 0), j.value("field", std::string()),
                               reason_of(message, j["file"].get<std::string>(), j.value("line", 0),
                                         j.value("field", std::string())));
      throw std::runtime_error("the served master refused: " + message);
    }
    return j;
  }
  throw std::runtime_error("no answer from the served master within " + std::to_string(timeout) +
                           " s (is `treefarm-master --serve` running there, with this client's key authorized?)");
}

nlohmann::json ServeClient::status(double timeout) {
  const std::string req = nlohmann::json{{"type", "status"}}.dump();
  impl_->socket.send(zmq::buffer(req), zmq::send_flags::none);
  for (;;) {
    auto j = receive(timeout, nullptr);
    if (j.value("type", "") == "status") return j;
  }
}

nlohmann::json ServeClient::cancel(std::uint64_t id, double timeout) {
  const std::string req = nlohmann::json{{"type", "cancel"}, {"id", id}}.dump();
  impl_->socket.send(zmq::buffer(req), zmq::send_flags::none);
  for (;;) {
    auto j = receive(timeout, nullptr);  // a refusal ("no queued or running experiment N") throws
    if (j.value("type", "") == "cancelled" && j.value("id", std::uint64_t{0}) == id) return j;
  }
}

void ServeClient::fetch_outputs(const std::string& out_dir, std::uint64_t id, std::uint64_t count) {
  for (std::uint64_t index = 0; index < count; ++index) {
    std::filesystem::path part, file;
    std::ofstream out;
    std::uint64_t offset = 0, total = 0;
    do {  // one chunk asked at a time: the master reads it from disk when asked
      const std::string req = nlohmann::json{{"type", "fetch"}, {"id", id}, {"file", index}, {"offset", offset}}.dump();
      impl_->socket.send(zmq::buffer(req), zmq::send_flags::none);
      nlohmann::json head;
      do head = receive(60, nullptr);
      while (head.value("type", "") != "chunk");
      const auto app = head.value("app", std::string()), name = head.value("name", std::string());
      if (!plain_name(app) || !plain_name(name))
        throw std::runtime_error("the server sent an output file named '" + app + "/" + name + "': not a plain file name");
      if (head.value("file", count) != index || head.value("offset", total + 1) != offset)
        throw std::runtime_error("the server sent a chunk of another output file than the one asked");
      if (file.empty()) {
        total = head.value("bytes", std::uint64_t{0});
        const auto dir = std::filesystem::path(out_dir) / "outputs" / app;
        std::filesystem::create_directories(dir);
        file = dir / name;
        part = dir / (name + ".part");
        out.open(part, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("cannot write " + part.string());
      }
      if (impl_->attached.size() == 0 && offset < total)
        throw std::runtime_error("the server sent an empty chunk of " + app + "/" + name);
      out.write(static_cast<const char*>(impl_->attached.data()), static_cast<std::streamsize>(impl_->attached.size()));
      offset += impl_->attached.size();
      if (offset > total) throw std::runtime_error("the server sent more of " + app + "/" + name + " than its size");
    } while (offset < total);
    out.close();
    if (!out) throw std::runtime_error("cannot write " + part.string());
    std::filesystem::rename(part, file);
  }
}

nlohmann::json ServeClient::submit(const Submission& s, const std::atomic<bool>* stop) {
  nlohmann::json req{{"type", "submit"},
                     {"name", std::filesystem::path(s.experiment).filename().string()},
                     {"experiment", s.experiment_text.empty() ? read_file(s.experiment, "experiment file") : s.experiment_text}};
  // The served master's limits (master/Server.hpp), checked here first: a clear refusal
  // naming this file rather than a connection closed by the master.
  if (const auto size = req["experiment"].get_ref<const std::string&>().size(); size > max_experiment_bytes)
    throw model::FileError(s.experiment, 0, "", std::to_string(size) + " bytes: a served master accepts experiment files of at most " +
                                                    std::to_string(max_experiment_bytes) + " bytes");
  if (!s.policy.empty()) req["policy"] = s.policy;
  if (!s.out_dir.empty()) req["outputs"] = true;  // output files come back into out_dir/outputs/
  if (!s.calibration.empty()) req["calibration"] = read_file(s.calibration, "calibration file");
  if (s.calibrate != Submission::Calibrate::no) req["calibrate"] = s.calibrate == Submission::Calibrate::only ? "only" : "first";
  if (!s.out_dir.empty()) std::filesystem::create_directories(s.out_dir);
  // A command's input_file inside the experiment's folder travels with it (one frame each).
  const auto inputs = input_files_of(s.experiment, req["experiment"].get<std::string>());
  req["inputs"] = nlohmann::json::array();
  std::uint64_t input_bytes = 0;
  for (const auto& [rel, path] : inputs) {
    const auto size = std::filesystem::file_size(path);
    if (size > max_frame_bytes)
      throw std::invalid_argument("input file " + path.string() + ": " + std::to_string(size) +
                                  " bytes; a served master accepts input files of at most " + std::to_string(max_frame_bytes) + " bytes");
    input_bytes += size;
    req["inputs"].push_back({{"path", rel}, {"bytes", size}});
  }
  if (inputs.size() > max_input_files || input_bytes > max_input_bytes)
    throw std::invalid_argument(std::to_string(inputs.size()) + " input files of " + std::to_string(input_bytes) +
                                " bytes in all: a served master accepts at most " + std::to_string(max_input_files) +
                                " files, " + std::to_string(max_input_bytes) + " bytes in all");
  const std::string text = req.dump();
  if (text.size() > max_frame_bytes)
    throw std::invalid_argument("the submission is " + std::to_string(text.size()) + " bytes as sent (experiment and " +
                                "calibration); a served master accepts at most " + std::to_string(max_frame_bytes));
  impl_->socket.send(zmq::buffer(text), inputs.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string bytes = read_file(inputs[i].second.string(), "input file");
    impl_->socket.send(zmq::message_t(bytes.data(), bytes.size()),
                       i + 1 < inputs.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  // The first answer (queued or refused) comes at once; the end when the run is over. A
  // bad file is named as the user knows it, not as the master's copy (STATE/job-N/NAME).
  nlohmann::json j;
  try {
    j = receive(30, stop);
  } catch (const model::FileError& e) {
    const bool copy = std::filesystem::path(e.file()).filename() == std::filesystem::path(s.experiment).filename();
    const auto file = copy ? s.experiment : !s.calibration.empty() ? s.calibration : e.file();
    throw model::FileError(file, e.line(), e.field(), reason_of(e.what(), e.file(), e.line(), e.field()));
  }
  const std::uint64_t id = j.value("id", std::uint64_t{0});
  if (id != 0) impl_->watch_request = nlohmann::json{{"type", "watch"}, {"id", id}}.dump();
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s.timeout);
  bool cancelling = false;
  // Ctrl-C: this submitter's own experiment is cancelled; its end (and results) still come.
  const auto start_cancelling = [&] {
    cancelling = true;
    const std::string cancel_request = nlohmann::json{{"type", "cancel"}, {"id", id}}.dump();
    impl_->socket.send(zmq::buffer(cancel_request), zmq::send_flags::none);
    if (s.on_message) s.on_message({{"type", "cancelling"}, {"id", id}});
    until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  };
  for (;;) {
    if (!j.empty() && s.on_message) s.on_message(j);
    if (j.value("type", "") == "done") break;
    if (!cancelling && stop && stop->load()) start_cancelling();
    double left = 0;
    if (s.timeout > 0 || cancelling) {
      left = std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0)
        throw std::runtime_error(cancelling ? "the cancelled experiment did not end within 60 s"
                                            : "the experiment did not end within " + std::to_string(s.timeout) + " s");
    }
    try {
      j = receive(left, cancelling ? nullptr : stop);
    } catch (const std::runtime_error&) {
      if (cancelling || !stop || !stop->load()) throw;
      start_cancelling();
      j = nlohmann::json::object();  // nothing received
    }
  }
  if (!s.out_dir.empty()) fetch_outputs(s.out_dir, id, j.value("outputs", std::uint64_t{0}));
  if (!s.out_dir.empty() && j.contains("results") && j["results"].is_string())
    metrics::write_file_atomically(std::filesystem::path(s.out_dir) / "results.json", j["results"].get<std::string>());
  // A calibration made on the served tree (submit --calibrate, calibrate --to).
  if (j.contains("calibration") && j["calibration"].is_string()) {
    const auto file = !s.calibration_out.empty() ? std::filesystem::path(s.calibration_out)
                      : !s.out_dir.empty()       ? std::filesystem::path(s.out_dir) / "calibration.json"
                                                 : std::filesystem::path();
    if (!file.empty()) {
      if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
      metrics::write_file_atomically(file, j["calibration"].get<std::string>());
    }
  }
  return j;
}

}  // namespace treefarm::tools
