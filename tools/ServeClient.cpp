#include "tools/ServeClient.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/model/ExperimentText.hpp"
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
static std::vector<std::pair<std::string, std::filesystem::path>> input_files_of(const std::string& experiment) {
  std::vector<std::pair<std::string, std::filesystem::path>> out;
  model::Experiment ex;
  try {
    // As the served master reads it: an experiment without [[node]] tables runs on the
    // live tree, so a master node stands in for the tree here too (master/Server.cpp).
    std::string text = model::read_input_file(experiment);
    if (!model::has_node_tables(text)) text += "\n\n[[node]]\nname = \"master\"\ncores = 0\n";
    ex = model::parse_experiment(text, experiment);
  } catch (const std::exception&) {
    return out;
  }
  const auto folder = std::filesystem::absolute(experiment).parent_path().lexically_normal();
  for (const auto& app : ex.apps) {
    if (app.input_file.empty()) continue;
    const auto file = std::filesystem::absolute(app.input_file).lexically_normal();
    const auto rel = file.lexically_relative(folder);
    if (rel.empty() || *rel.begin() == "..") continue;
    bool seen = false;
    for (const auto& [r, f] : out) seen = seen || r == rel.string();
    if (!seen) out.emplace_back(rel.string(), file);
  }
  return out;
}

struct ServeClient::Impl {
  zmq::context_t ctx{1};
  zmq::socket_t socket{ctx, zmq::socket_type::dealer};
  zmq::message_t attached;  ///< the second frame of the last message received (an output file)
};

namespace {
/// A name the server sent for a directory or file under --out: one plain path component.
bool plain_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}
}  // namespace

ServeClient::ServeClient(const ServeEndpoint& e) : impl_(std::make_unique<Impl>()) {
  if (e.endpoint.empty()) throw std::invalid_argument("--to: the served master's channel endpoint is needed (tcp://HOST:PORT)");
  net::configure_socket(impl_->socket, false);
  if (!e.curve_secret.empty()) {
    if (e.server_key.empty()) throw std::invalid_argument("--curve-secret needs --server-key (the master's public key file)");
    net::CurveConfig c;
    c.enabled = true;
    c.own = net::load_secret_key_file(e.curve_secret);
    c.parent_public_key = net::load_public_key_file(e.server_key);
    net::apply_curve_client(impl_->socket, c);
  } else if (!net::is_loopback_endpoint(e.endpoint) && !e.insecure) {
    throw std::invalid_argument("refusing an unencrypted channel to " + e.endpoint +
                                ": give --curve-secret and --server-key, or --insecure");
  }
  impl_->socket.connect(e.endpoint);
}

ServeClient::~ServeClient() = default;

nlohmann::json ServeClient::receive(double timeout, const std::atomic<bool>* stop) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout > 0 ? timeout : 1e9);
  while (std::chrono::steady_clock::now() < until) {
    if (stop && stop->load()) throw std::runtime_error("interrupted (the experiment goes on on the served tree)");
    zmq::pollitem_t item{static_cast<void*>(impl_->socket), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, std::chrono::milliseconds(200));
    } catch (const zmq::error_t& err) {
      if (err.num() == EINTR) continue;
      throw;
    }
    if (!(item.revents & ZMQ_POLLIN)) continue;
    zmq::message_t frame;
    if (!impl_->socket.recv(frame, zmq::recv_flags::dontwait)) continue;
    impl_->attached = zmq::message_t();
    if (frame.more()) {  // an output file follows its JSON header; anything more is refused
      (void)impl_->socket.recv(impl_->attached, zmq::recv_flags::none);
      if (impl_->attached.more()) throw std::runtime_error("the server sent a message of more than two frames");
    }
    auto j = nlohmann::json::parse(frame.to_string_view(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("the server sent something that is not a JSON object");
    if (j.value("type", "") == "error") throw std::runtime_error("the served master refused: " + j.value("message", "?"));
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

void ServeClient::write_output(const std::string& out_dir, const nlohmann::json& head) {
  if (out_dir.empty()) return;
  const auto app = head.value("app", std::string()), name = head.value("name", std::string());
  if (!plain_name(app) || !plain_name(name))
    throw std::runtime_error("the server sent an output file named '" + app + "/" + name + "': not a plain file name");
  if (head.value("bytes", std::uint64_t{0}) != impl_->attached.size())
    throw std::runtime_error("the server sent output " + app + "/" + name + " with " +
                             std::to_string(impl_->attached.size()) + " bytes, its header says " +
                             std::to_string(head.value("bytes", std::uint64_t{0})));
  const auto dir = std::filesystem::path(out_dir) / "outputs" / app;
  std::filesystem::create_directories(dir);
  metrics::write_file_atomically(dir / name, impl_->attached.to_string_view());
}

nlohmann::json ServeClient::submit(const Submission& s, const std::atomic<bool>* stop) {
  nlohmann::json req{{"type", "submit"},
                     {"name", std::filesystem::path(s.experiment).filename().string()},
                     {"experiment", read_file(s.experiment, "experiment file")}};
  if (!s.policy.empty()) req["policy"] = s.policy;
  if (!s.out_dir.empty()) req["outputs"] = true;  // output files come back into out_dir/outputs/
  if (!s.calibration.empty()) req["calibration"] = read_file(s.calibration, "calibration file");
  if (s.calibrate != Submission::Calibrate::no) req["calibrate"] = s.calibrate == Submission::Calibrate::only ? "only" : "first";
  if (!s.out_dir.empty()) std::filesystem::create_directories(s.out_dir);
  // A command's input_file inside the experiment's folder travels with it (one frame each).
  const auto inputs = input_files_of(s.experiment);
  req["inputs"] = nlohmann::json::array();
  for (const auto& [rel, path] : inputs)
    req["inputs"].push_back({{"path", rel}, {"bytes", std::filesystem::file_size(path)}});
  const std::string text = req.dump();
  impl_->socket.send(zmq::buffer(text), inputs.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string bytes = read_file(inputs[i].second.string(), "input file");
    impl_->socket.send(zmq::message_t(bytes.data(), bytes.size()),
                       i + 1 < inputs.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  // The first answer (queued or refused) comes at once; the end when the run is over.
  auto j = receive(30, stop);
  const std::uint64_t id = j.value("id", std::uint64_t{0});
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
    if (j.value("type", "") == "output") write_output(s.out_dir, j);
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
