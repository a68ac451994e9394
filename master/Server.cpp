#include "master/Server.hpp"
#include "master/OutputFiles.hpp"
#include "master/RootPlan.hpp"
#include "master/ServeState.hpp"
#include "master/SubmitAccess.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <thread>
#include <vector>

#include <malloc.h>

#include <nlohmann/json.hpp>
#include <spdlog/details/os.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "runtime/core/Policy.hpp"
#include "runtime/dashboard/Feed.hpp"
#include "runtime/dashboard/Page.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/model/ExperimentText.hpp"
#include "runtime/node/ExitCode.hpp"
#include "runtime/zmq/Wire.hpp"
#include "runtime/zmq/ZmqNode.hpp"
#include "tasks/Benchmark.hpp"

namespace treefarm::master {

namespace {
using nlohmann::json;

/// Largest experiment text accepted on the submit channel (bytes).
constexpr std::size_t max_experiment_bytes = 4u << 20;
/// Largest frame accepted on the submit channel (bytes): a request (the experiment and a
/// calibration as JSON) or one input file. libzmq drops a connection that announces a
/// bigger frame before it reads (or stores) its bytes (ZMQ_MAXMSGSIZE).
constexpr std::int64_t max_frame_bytes = 16 << 20;
/// Input files one submission may bring (a command's input_file), and their total (bytes).
constexpr std::size_t max_input_files = 1024;
constexpr std::size_t max_input_bytes = 64u << 20;
/// Messages queued to or from one client connection (ZMQ_SNDHWM, ZMQ_RCVHWM): past the
/// send bound an answer to a client that does not read is dropped, not kept.
constexpr int channel_hwm = 16;
/// An output file goes to its submitter in chunks of at most this many bytes, each one
/// read from disk when the client asks for it (a "fetch"): a client that does not read
/// holds at most channel_hwm chunks of the master's memory.
constexpr std::size_t output_chunk_bytes = 1u << 20;
/// Finished experiments kept for `treefarm status`.
constexpr std::size_t finished_kept = 20;

std::atomic<zmq_node::ZmqNode*> serving{nullptr};
/// stop_serving() was called: a signal that came before the served tree existed is not lost.
std::atomic<bool> serve_stop_requested{false};

/// The first error logged on one thread while armed: why a run failed ("no node can
/// compute ...", "calibration incomplete ..."), for its submitter and not only the log.
class FirstError final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void arm() {
    std::lock_guard lock(mutex_);
    thread_ = spdlog::details::os::thread_id();
    first_.clear();
    armed_ = true;
  }
  std::string take() {
    std::lock_guard lock(mutex_);
    armed_ = false;
    return std::move(first_);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (armed_ && msg.level >= spdlog::level::err && msg.thread_id == thread_ && first_.empty())
      first_.assign(msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}

 private:
  bool armed_ = false;
  std::size_t thread_ = 0;
  std::string first_;
};

/// What the loop thread and the channel thread share (under `mu`).
struct Shared {
  std::mutex mu;
  std::deque<Job> queue;
  /// To a client: a JSON text.
  struct Out {
    std::string client, text;
  };
  std::vector<Out> outbox;
  /// The output files of a finished experiment, fetched by its submitter chunk by chunk
  /// (the most recent finished_kept experiments with outputs).
  struct Outputs {
    std::uint64_t id = 0;
    std::string client;
    std::vector<std::pair<std::string, std::filesystem::path>> files;  ///< (application, file)
  };
  std::deque<Outputs> outputs;
  json running;                                             ///< null between runs
  json tree = json::array();                                ///< the last run's nodes
  std::vector<std::string> waiting;                         ///< children waiting for the next run
  std::deque<json> finished;
  std::uint64_t next_id = 1;
  std::uint64_t running_id = 0;           ///< the experiment running now (0: none)
  std::string running_owner;              ///< its Job::owner
  std::string running_client;             ///< its submitter's connection now (a "watch" after a restart sets it)
  std::atomic<bool> cancel_running{false};  ///< `treefarm cancel` of the running one (MasterOptions::cancel)
  void send(const std::string& client, const json& j) {
    std::lock_guard lock(mu);
    outbox.push_back({client, j.dump()});
  }
};

/// At most output_chunk_bytes of a file from `offset`, read into the message itself.
/// Throws std::runtime_error if the file cannot be read there.
zmq::message_t read_chunk(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t size) {
  std::ifstream in(path, std::ios::binary);
  if (!in || offset > size) throw std::runtime_error("output file " + path.filename().string() + " cannot be read");
  zmq::message_t m(static_cast<std::size_t>(std::min<std::uint64_t>(size - offset, output_chunk_bytes)));
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(m.data()), static_cast<std::streamsize>(m.size()));
  if (in.gcount() != static_cast<std::streamsize>(m.size()))
    throw std::runtime_error("output file " + path.filename().string() + " changed while it was sent");
  return m;
}

/// A refusal for a client: the message, and for a bad experiment or calibration file its
/// file, line and field (the client names its own copy; exit code 3).
json refusal(const std::exception& e) {
  json j{{"type", "error"}, {"message", e.what()}};
  if (const auto* f = dynamic_cast<const model::FileError*>(&e)) {
    j["file"] = f->file();
    j["line"] = f->line();
    j["field"] = f->field();
  }
  return j;
}

/// The master [[node]] a node-less experiment gets on a served tree: the live root.
std::string stand_in_master(const std::string& name) {
  return "\n\n# added by the served master: the experiment runs on the live tree\n[[node]]\nname = " +
         json(name).dump() + "\ncores = 0\n";
}

/// The [[node]] tables of the tree a calibration measured, from its nodes' parents, parents
/// before children: what a node-less experiment gets on a served tree when it comes with a
/// calibration, so that the LP sees the tree's shape (docs/serve.md, "Calibration and the
/// lp policy"). `root` is the served master's name. Throws std::invalid_argument naming
/// `source` when the calibration does not give one tree rooted at `root`.
std::string tree_tables(const model::Calibration& cal, const std::string& root, const std::string& source) {
  std::map<std::string, std::vector<std::string>> children;
  std::vector<std::string> roots;
  for (const auto& [name, nc] : cal.nodes) {
    if (nc.parent.empty()) roots.push_back(name);
    else children[nc.parent].push_back(name);
  }
  const auto what = "the calibration " + source + " ";
  if (cal.nodes.size() > 1 && roots.size() == cal.nodes.size())
    throw std::invalid_argument(what + "does not record its nodes' parents (it was made before they were recorded): "
                                "calibrate the served tree in place (treefarm submit --calibrate, or treefarm "
                                "compare --to without --calibration)");
  if (roots.size() != 1 || roots[0] != root)
    throw std::invalid_argument(what + "is of a tree whose master is " +
                                (roots.size() == 1 ? "'" + roots[0] + "'" : std::to_string(roots.size()) + " nodes") +
                                "; this served tree's master is '" + root + "'");
  std::string text = "\n\n# added by the served master: the live tree as the calibration measured it\n";
  std::vector<std::string> order{root};
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& name = order[i];
    const auto& nc = cal.nodes.at(name);
    text += "[[node]]\nname = " + json(name).dump() + "\n";
    if (!nc.parent.empty()) text += "parent = " + json(nc.parent).dump() + "\n";
    text += "cores = " + std::to_string(nc.cores) + "\n\n";
    for (const auto& c : children[name]) order.push_back(c);
  }
  if (order.size() != cal.nodes.size())
    throw std::invalid_argument(what + "has nodes whose parents are not in it or form a cycle");
  return text;
}

/// The experiment a job runs with `cal` (its text; on a live tree with tree_tables() added),
/// checked against the calibration: throws naming `source` if it does not match.
model::Experiment experiment_with(const std::string& text, bool live_tree, const model::Calibration& cal,
                                  const std::string& root, const std::string& source, const std::string& path,
                                  std::string* full_text = nullptr) {
  const std::string full = live_tree ? text + tree_tables(cal, root, source) : text;
  auto ex = model::parse_experiment(full, path, {.confine_inputs = true});
  model::check_calibration_matches(cal, ex, source);
  if (full_text) *full_text = full;
  return ex;
}

/// The served tree's state (`treefarm status`, the dashboard): {serving, tree, waiting,
/// running, queue, finished}. The caller holds shared.mu; `now` is seconds since serving began.
json status_of(const Shared& shared, const std::string& name, double now) {
  json queue = json::array();
  std::size_t position = 0;
  for (const auto& j : shared.queue)
    queue.push_back({{"id", j.id}, {"name", j.name}, {"policy", j.policy}, {"position", ++position},
                     {"waiting_seconds", now - j.submitted}});
  json finished = json::array();
  for (const auto& f : shared.finished) finished.push_back(f);
  return {{"serving", name}, {"tree", shared.tree},   {"waiting", shared.waiting}, {"running", shared.running},
          {"queue", queue},  {"finished", finished}};
}

/// The submit/status channel: a ROUTER on its own thread and context.
class Channel {
 public:
  Channel(const ServeOptions& o, const JobStore& store, Shared& shared, std::chrono::steady_clock::time_point t0)
      : opt_(o), store_(store), shared_(shared), t0_(t0), socket_(ctx_, zmq::socket_type::router) {
    net::configure_socket(socket_, true);
    socket_.set(zmq::sockopt::handshake_ivl, 5000);
    // Bounded per connection: frames bigger than max_frame_bytes are refused by libzmq
    // before they are stored (the client sees its connection close); complete messages
    // wait at most channel_hwm each way.
    socket_.set(zmq::sockopt::maxmsgsize, max_frame_bytes);
    socket_.set(zmq::sockopt::sndhwm, channel_hwm);
    socket_.set(zmq::sockopt::rcvhwm, channel_hwm);
    socket_.bind(o.bind);
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    access_.bound(endpoint_);
    thread_ = std::thread([this] { loop(); });
  }
  ~Channel() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

  void loop() {
    while (!stop_) {
      {
        std::vector<Shared::Out> out;
        {
          std::lock_guard lock(shared_.mu);
          out.swap(shared_.outbox);
        }
        for (auto& o : out) answer(o.client, zmq::message_t(o.text.data(), o.text.size()));
      }
      zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
      try {
        zmq::poll(&item, 1, std::chrono::milliseconds(50));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        throw;
      }
      if (!(item.revents & ZMQ_POLLIN)) continue;
      for (int k = 0; k < 64 && !stop_; ++k)
        if (!receive_one()) break;
    }
  }

  /// Sends `text` (and `bytes`, a second frame, if given) to `client` without waiting: an
  /// answer to a client that is gone or reads too slowly (channel_hwm messages queued) is
  /// dropped — its experiment's files stay in the job directory.
  void answer(const std::string& client, zmq::message_t text, zmq::message_t* bytes = nullptr) {
    try {
      if (!socket_.send(zmq::buffer(client), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        if (slow_warned_.size() > 1024) slow_warned_.clear();
        if (slow_warned_.insert(client).second)
          spdlog::warn("{}: a client does not read its answers ({} queued): later ones are dropped", opt_.name, channel_hwm);
        return;
      }
      socket_.send(text, bytes ? zmq::send_flags::sndmore : zmq::send_flags::none);
      if (bytes) socket_.send(*bytes, zmq::send_flags::none);
    } catch (const zmq::error_t& e) {  // the client left
      spdlog::debug("{}: could not answer a client: {}", opt_.name, e.what());
    }
  }

  /// Reads one message, frame by frame: the routing identity, the request, then at most
  /// max_input_files frames of max_input_bytes in all (more are read and dropped at once,
  /// and the submission refused). False when nothing was waiting.
  bool receive_one() {
    zmq::message_t identity;
    if (!socket_.recv(identity, zmq::recv_flags::dontwait)) return false;
    if (!identity.more()) return true;  // not our client: ignored
    zmq::message_t head;
    (void)socket_.recv(head, zmq::recv_flags::none);
    std::vector<zmq::message_t> files;
    std::size_t extra = 0, bytes = 0;
    for (bool more = head.more(); more;) {
      zmq::message_t f;
      (void)socket_.recv(f, zmq::recv_flags::none);
      more = f.more();
      ++extra;
      if (files.size() < extra - 1 || files.size() >= max_input_files || bytes + f.size() > max_input_bytes) continue;
      bytes += f.size();
      files.push_back(std::move(f));
    }
    const std::string client = identity.to_string();
    const bool over = files.size() < extra;
    if (over) {
      // libzmq held the whole message until its last frame came; what the frames took goes
      // back to the system now (the process keeps freed payloads otherwise: PayloadMemory).
      files.clear();
      ::malloc_trim(0);
    }
    try {
      if (over)
        throw std::invalid_argument("a submission with " + std::to_string(extra) + " file frames or more than " +
                                    std::to_string(max_input_bytes) + " bytes of input files (at most " +
                                    std::to_string(max_input_files) + " files, " + std::to_string(max_input_bytes) +
                                    " bytes in all)");
      auto request = json::parse(head.to_string_view(), nullptr, false);
      if (request.is_discarded() || !request.is_object()) throw std::invalid_argument("a request that is not a JSON object");
      handle(client, access_.peer(client, head), request, std::span(files));
    } catch (const std::exception& e) {
      shared_.send(client, refusal(e));
    }
    return true;
  }

  /// {"type":"fetch","id":N,"file":I,"offset":O} from the submitter of experiment N: the
  /// bytes of its I-th output file from O, at most output_chunk_bytes, read now.
  void fetch(const std::string& client, const json& request) {
    const auto id = request.at("id").get<std::uint64_t>();
    const auto index = request.at("file").get<std::uint64_t>();
    const auto offset = request.value("offset", std::uint64_t{0});
    std::pair<std::string, std::filesystem::path> file;
    std::size_t count = 0;
    {
      std::lock_guard lock(shared_.mu);
      const auto it = std::find_if(shared_.outputs.begin(), shared_.outputs.end(), [&](const auto& o) { return o.id == id; });
      if (it == shared_.outputs.end() || it->client != client)
        throw std::invalid_argument("no output files of experiment " + std::to_string(id) + " for this client");
      count = it->files.size();
      if (index >= count)
        throw std::invalid_argument("experiment " + std::to_string(id) + " has " + std::to_string(count) + " output files");
      file = it->files[index];
    }
    std::error_code ec;
    const auto size = std::filesystem::file_size(file.second, ec);
    if (ec) throw std::runtime_error("output file " + file.second.filename().string() + ": " + ec.message());
    zmq::message_t bytes = read_chunk(file.second, offset, size);
    const std::string head = json{{"type", "chunk"}, {"id", id}, {"file", index}, {"app", file.first},
                                  {"name", file.second.filename().string()}, {"bytes", size}, {"offset", offset}}
                                 .dump();
    answer(client, zmq::message_t(head.data(), head.size()), &bytes);
  }

  void handle(const std::string& client, const Peer& from, const json& request, std::span<zmq::message_t> files) {
    const std::string type = request.value("type", "");
    if (type == "status") {
      std::lock_guard lock(shared_.mu);
      json reply = status_of(shared_, opt_.name, now());
      reply["type"] = "status";
      shared_.outbox.push_back({client, reply.dump()});
      return;
    }
    if (type == "cancel") return cancel(client, from, request.at("id").get<std::uint64_t>());
    if (type == "watch") return watch(client, from, request.at("id").get<std::uint64_t>());
    if (type == "fetch") return fetch(client, request);
    if (type != "submit" && !files.empty()) throw std::invalid_argument("a " + type + " request with file frames");
    if (type != "submit")
      throw std::invalid_argument("unknown request type '" + type + "' (expected submit, status, cancel or fetch)");
    Job job;
    job.client = client;
    job.owner = from.owner;
    job.name = std::filesystem::path(request.at("name").get<std::string>()).filename().string();
    job.text = request.at("experiment").get<std::string>();
    job.policy = request.value("policy", "");
    job.calibration = request.value("calibration", "");
    job.calibrate = request.value("calibrate", "");
    if (job.calibrate != "" && job.calibrate != "first" && job.calibrate != "only")
      throw std::invalid_argument("calibrate '" + job.calibrate + "': expected \"first\" or \"only\"");
    if (!job.calibrate.empty() && !job.calibration.empty())
      throw std::invalid_argument("a submission with a calibration file and a request to calibrate: one or the other");
    job.outputs = request.value("outputs", false);
    if (job.name.empty()) job.name = "experiment.toml";
    if (job.text.size() > max_experiment_bytes)
      throw std::invalid_argument("experiment of " + std::to_string(job.text.size()) + " bytes, limit " +
                                  std::to_string(max_experiment_bytes));
    job.live_tree = !model::has_node_tables(job.text);
    {
      std::lock_guard lock(shared_.mu);
      job.id = shared_.next_id++;
    }
    // The job's directory holds the experiment and the input files sent with it, so that a
    // command's relative input_file resolves there as beside the client's copy.
    const auto dir = store_.job_dir(job.id);
    model::Experiment ex;
    try {
      std::filesystem::create_directories(dir);
      if (files.size() > max_input_files) throw std::invalid_argument("more than " + std::to_string(max_input_files) + " input files");
      write_inputs(dir, request.value("inputs", json::array()), files);
      // Refused at once if it does not parse (file, line, field), not when its turn comes.
      ex = model::parse_experiment(job.live_tree ? job.text + stand_in_master(opt_.name) : job.text,
                                   (dir / job.name).string(), {.confine_inputs = true});
      access_.check_commands(ex, from, (dir / job.name).string());
      if (!job.policy.empty()) (void)core::make_policy(job.policy, {});  // an unknown policy name throws here
      // A calibration sent along is checked now too: a live tree's gives the tree's shape.
      if (!job.calibration.empty()) {
        const std::string source = "(the calibration sent with " + job.name + ")";
        (void)experiment_with(job.text, job.live_tree, model::parse_calibration(job.calibration, source), opt_.name,
                              source, (dir / job.name).string());
      }
      store_.save(job, "queued");  // a restart takes it up (docs/serve.md, "Restarts")
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      throw;
    }
    std::lock_guard lock(shared_.mu);
    job.submitted = now();
    shared_.queue.push_back(job);
    spdlog::info("{}: experiment {} ({}, {} tasks{}) queued at position {}", opt_.name, job.id, job.name,
                 ex.total_tasks(), job.live_tree ? ", live tree" : "", shared_.queue.size());
    shared_.outbox.push_back({client, json{{"type", "queued"}, {"id", job.id}, {"position", shared_.queue.size()}}.dump()});
  }

  /// `treefarm cancel` (docs/serve.md): a queued experiment leaves the queue (its submitter
  /// gets "done" with cancelled); the running one ends at the master's next tick, its
  /// results.json saying cancelled. Only its submitter or an admin may (SubmitAccess).
  void cancel(const std::string& client, const Peer& from, std::uint64_t id) {
    std::lock_guard lock(shared_.mu);
    if (shared_.running_id == id) {
      access_.check_cancel(from, shared_.running_owner, id);
      shared_.cancel_running = true;
      spdlog::warn("{}: experiment {} cancelled by a client while running", opt_.name, id);
      shared_.outbox.push_back({client, json{{"type", "cancelled"}, {"id", id}, {"was", "running"}}.dump()});
      return;
    }
    for (auto it = shared_.queue.begin(); it != shared_.queue.end(); ++it) {
      if (it->id != id) continue;
      access_.check_cancel(from, it->owner, id);
      spdlog::warn("{}: experiment {} cancelled by a client while queued", opt_.name, id);
      const json done{{"type", "done"}, {"id", id}, {"exit_code", node::exit_interrupted}, {"cancelled", true},
                      {"results", nullptr}, {"outputs", 0}};
      shared_.outbox.push_back({it->client, done.dump()});
      store_.save_done(*it, done);
      shared_.finished.push_back({{"id", id}, {"name", it->name}, {"exit_code", node::exit_interrupted}, {"cancelled", true},
                                  {"apps", json::array()}});
      if (shared_.finished.size() > finished_kept) shared_.finished.pop_front();
      shared_.queue.erase(it);
      shared_.outbox.push_back({client, json{{"type", "cancelled"}, {"id", id}, {"was", "queued"}}.dump()});
      return;
    }
    throw std::invalid_argument("no queued or running experiment " + std::to_string(id));
  }

  /// {"type":"watch","id":N}: a waiting submitter says it still waits, from the connection
  /// it has now — after the master restarted, its "done" goes there, or, if the experiment
  /// already ended, comes at once. Only from its submitter or an admin.
  void watch(const std::string& client, const Peer& from, std::uint64_t id) {
    std::lock_guard lock(shared_.mu);
    if (shared_.running_id == id) {
      access_.check_cancel(from, shared_.running_owner, id);
      shared_.running_client = client;
      return;
    }
    for (auto& job : shared_.queue)
      if (job.id == id) {
        access_.check_cancel(from, job.owner, id);
        job.client = client;
        return;
      }
    const auto done = store_.done_of(id);
    if (!done)
      throw std::invalid_argument("experiment " + std::to_string(id) + " is not known to this master (its state directory holds no such experiment)");
    access_.check_cancel(from, done->second, id);
    shared_.outbox.push_back({client, done->first.dump()});
  }

  const ServeOptions& opt_;
  const JobStore& store_;  ///< STATE: job-N/ directories
  Shared& shared_;
  std::chrono::steady_clock::time_point t0_;
  zmq::context_t ctx_{1};
  zmq::socket_t socket_;
  SubmitAccess access_{ctx_, socket_, opt_};  ///< CURVE roles, ipc:// peers (after socket_, before the bind)
  std::string endpoint_;
  std::set<std::string> slow_warned_;  ///< clients told of once in the log (bounded: cleared past 1024)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

void stop_serving() {
  serve_stop_requested = true;  // before looking for the tree: serve() looks at it after setting it
  if (auto* root = serving.load()) root->stop();
}

int serve(const ServeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.allow_commands && o.base.cores && !o.base.cores->empty())
    throw std::invalid_argument("--allow-commands with --cpus: a served master that computes would run submitted "
                                "programs itself; give one or the other (docs/security.md)");
  if (o.state_dir.empty()) throw std::invalid_argument("serve: no state folder (treefarm-master makes a temporary one)");
  const std::filesystem::path state = o.state_dir;
  const JobStore store(state);  // mode 0700

  node::NodeOptions node_options = root_liveness_options(o.base);
  node_options.name = o.name;
  zmq_node::Endpoints endpoints;
  endpoints.listen = o.base.listen;
  endpoints.ready_file = o.base.ready_file;
  endpoints.curve = o.base.curve;
  endpoints.insecure = o.base.insecure;
  endpoints.serve = true;
  zmq_node::Compute compute;
  if (o.base.cores) compute.cores = *o.base.cores;
  compute.speed_probe = tasks::speed_per_core;  // `treefarm probe` measures the master too
  zmq_node::ZmqNode root(node_options, endpoints, compute);
  const std::string tree_endpoint = root.open();
  serving = &root;
  if (serve_stop_requested) root.stop();  // stopped before the tree was set up: serve nothing

  auto first_error = std::make_shared<FirstError>();
  spdlog::default_logger()->sinks().push_back(first_error);  // before the channel's thread logs
  Shared shared;
  // The dashboard shows the queue and the finished experiments too (docs/dashboard.md).
  struct DashboardState {
    dashboard::Feed* feed;
    ~DashboardState() {  // before `shared` goes
      if (feed) feed->set_serve_status({});
      if (feed) feed->set_job_reports({});
    }
  } dashboard_state{o.base.dashboard};
  if (o.base.dashboard)  // each finished experiment's report page (docs/dashboard.md)
    o.base.dashboard->set_job_reports([state](std::uint64_t id) {
      return dashboard::report_view_of_file((state / ("job-" + std::to_string(id)) / "out" / "results.json").string());
    });
  if (o.base.dashboard)
    o.base.dashboard->set_serve_status([&shared, &o, t0] {
      std::lock_guard lock(shared.mu);
      return status_of(shared, o.name, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    });
  if (!o.state_dir.empty()) {  // a restart: take up what the last master left (docs/serve.md, "Restarts")
    auto restored = store.restore();
    for (const auto& j : restored.queue)
      spdlog::info("{}: experiment {} ({}) taken up from {}{}", o.name, j.id, j.name, store.dir().string(),
                   j.resume ? ": it was running, it resumes from its journal" : ", queued");
    shared.queue = std::move(restored.queue);
    shared.next_id = restored.next_id;
  }
  Channel channel(o, store, shared, t0);
  if (!o.bind_file.empty()) {
    const auto tmp = o.bind_file + ".tmp";
    std::ofstream(tmp) << channel.endpoint() << "\n";
    std::filesystem::rename(tmp, o.bind_file);
  }
  spdlog::info("{}: workers join at {}; experiments are submitted at {} (treefarm submit FILE --to {}); state in {}",
               o.name, tree_endpoint, channel.endpoint(), channel.endpoint(), state.string());

  std::set<std::string> last_nodes;  // nodes of the last run besides the root
  const auto refresh_waiting = [&] {
    auto waiting = root.waiting_children();
    std::lock_guard lock(shared.mu);
    shared.waiting = std::move(waiting);
    return !shared.queue.empty();
  };
  while (root.idle(refresh_waiting)) {
    Job job;
    {
      std::lock_guard lock(shared.mu);
      job = shared.queue.front();
      shared.queue.pop_front();
      shared.running_id = job.id;
      shared.running_owner = job.owner;
      shared.running_client = job.client;
      shared.cancel_running = false;
      shared.running = {{"id", job.id}, {"name", job.name}, {"policy", job.policy}, {"live_tree", job.live_tree},
                        {"elapsed", 0}, {"apps", json::array()}};
    }
    const auto dir = store.job_dir(job.id);
    try {
      store.save(job, "running");
    } catch (const std::exception& e) {
      spdlog::error("{}: experiment {}: {}: a restart would not resume it", o.name, job.id, e.what());
    }
    const auto file = dir / job.name;  // the name errors and results.json give the experiment
    std::string text = job.live_tree ? job.text + stand_in_master(o.name) : job.text;
    std::string error;
    model::Experiment ex;
    try {
      ex = model::parse_experiment(text, file.string());  // as it parsed when it was submitted
    } catch (const std::exception& e) {
      error = e.what();
    }
    const auto calibration_file = dir / "calibration.json";
    json run_summary;
    MasterOptions m = o.base;
    m.experiment = file.string();
    m.summary = &run_summary;
    m.out_dir = (dir / "out").string();
    m.policy = job.policy;
    m.live = &root;
    m.progress = false;
    m.table = false;
    m.json_progress = false;
    m.resume = job.resume;  // it was running when the last master stopped: its journal holds what is done
    m.cancel = &shared.cancel_running;
    m.served = true;
    if (job.live_tree) {  // the tree as it is: the nodes of the last run and those waiting now
      std::set<std::string> expected = last_nodes;
      for (const auto& n : root.waiting_children()) expected.insert(n);
      m.wait_for_nodes = std::max<std::size_t>(1, expected.size());
      m.wait_timeout = std::min(m.wait_timeout, o.live_wait);
    }
    // A live tree with no node to compute on (no worker connected, no --cpus here) fails
    // after --live-wait seconds, saying so, rather than after the run's orphan timeout.
    bool no_node = false;
    if (job.live_tree && last_nodes.empty() && root.waiting_children().empty() && (!o.base.cores || o.base.cores->empty())) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.live_wait);
      (void)root.idle([&] {
        return !root.waiting_children().empty() || std::chrono::steady_clock::now() >= until || shared.cancel_running.load();
      });
      no_node = root.waiting_children().empty() && !shared.cancel_running.load();
    }
    std::set<std::string> seen;
    m.on_status = [&](const json& status) {
      for (const auto& n : status.at("nodes"))
        if (!n.at("parent").get<std::string>().empty()) seen.insert(n.at("name").get<std::string>());
      std::lock_guard lock(shared.mu);
      json r = status;
      r["id"] = job.id;
      r["name"] = job.name;
      r["policy"] = job.policy;
      r["live_tree"] = job.live_tree;
      shared.running = std::move(r);
      shared.tree = status.at("nodes");
    };
    if (!job.client.empty()) shared.send(job.client, {{"type", "started"}, {"id", job.id}});
    spdlog::info("{}: experiment {} ({}) starts", o.name, job.id, job.name);
    int rc = node::exit_error;
    if (no_node)
      error = "no node joined within " + std::to_string(static_cast<int>(o.live_wait)) +
              " s (--live-wait), and the served master computes on no core of its own (--cpus): start workers with "
              "treefarm-worker --parent " + tree_endpoint;
    const auto run = [&](const MasterOptions& options) {
      if (ex.nodes.empty()) return static_cast<int>(node::exit_error);  // did not parse: `error` says why
      try {
        return run_master(ex, text, options);
      } catch (const std::exception& e) {
        error = e.what();
        spdlog::error("{}: experiment {}: {}", o.name, job.id, error);
        return static_cast<int>(node::exit_error);
      }
    };
    // Calibrated in place (docs/serve.md): every node of the tree as it is measures its
    // kernels and its link, as `treefarm calibrate` does, and the file records each node's
    // parent: the tree's shape for the LP.
    first_error->arm();
    std::string calibration = job.calibration;
    bool calibrated_here = false;
    if (!job.calibrate.empty() && error.empty()) {
      MasterOptions c = m;
      c.calibrate_out = calibration_file.string();
      c.out_dir.clear();
      c.cancel = nullptr;
      c.live_tree = job.live_tree;
      spdlog::info("{}: experiment {}: calibrating the {} in place", o.name, job.id, job.live_tree ? "live tree" : "experiment's tree");
      rc = run(c);
      calibration = rc == node::exit_ok ? read_text(calibration_file) : std::string();
      calibrated_here = !calibration.empty();
      if (calibrated_here) {  // one that measured too little (no node joined, say) is refused here
        try {
          const auto cal = model::parse_calibration(calibration, calibration_file.string());
          const auto measured_ex =
              experiment_with(job.text, job.live_tree, cal, o.name, calibration_file.string(), file.string());
          for (const auto& app : measured_ex.apps) {
            bool measured = false;
            for (const auto& [name, nc] : cal.nodes) measured = measured || nc.task_seconds.count(app.name);
            if (!measured)
              throw std::invalid_argument("no node of the tree measured application '" + app.name + "' (" +
                                          std::to_string(cal.nodes.size() - 1) +
                                          " nodes besides the master joined; one needs cores >= its cores_per_task)");
          }
        } catch (const std::exception& e) {
          error = std::string("the calibration of the served tree is not usable: ") + e.what();
          calibrated_here = false;
        }
      }
      if (!calibrated_here && error.empty())
        error = "the calibration of the served tree failed (exit code " + std::to_string(rc) + ")";
      if (!calibrated_here && rc == node::exit_ok) rc = node::exit_error;
    }
    if (job.calibrate != "only" && (job.calibrate.empty() || calibrated_here) && !shared.cancel_running.load()) {
      if (!calibration.empty()) {
        if (!calibrated_here) std::ofstream(calibration_file, std::ios::binary) << calibration;
        m.calibration = calibration_file.string();
        if (job.live_tree) {
          // The run waits for the nodes the calibration measured, as an experiment with
          // [[node]] tables does; a node gone since then is waited for --live-wait seconds.
          try {
            ex = experiment_with(job.text, true, model::parse_calibration(calibration, m.calibration), o.name,
                                 m.calibration, file.string(), &text);
            m.wait_for_nodes.reset();
          } catch (const std::exception& e) {
            error = e.what();
          }
        }
      }
      if (error.empty()) {
        std::filesystem::create_directories(m.out_dir);
        rc = run(m);
      } else {
        rc = node::exit_error;
      }
    } else if ((job.calibrate == "first" && calibrated_here) || (job.calibrate.empty() && shared.cancel_running.load())) {
      rc = node::exit_interrupted;  // cancelled while it calibrated, or before it started
    }
    // Why it failed, for its submitter: what the run said first (or the tree, if it could
    // not start it).
    if (const auto logged = first_error->take();
        error.empty() && rc != node::exit_ok && rc != node::exit_interrupted && rc != node::exit_wrong_results)
      error = !root.run_error().empty() ? root.run_error() : logged;
    const std::string results = read_text(std::filesystem::path(m.out_dir) / "results.json");
    // The tree and the figures as the run ended (RunRecord::summary; empty if it wrote no results).
    const bool have = run_summary.is_object();  // a calibration alone has no summary
    const json tree = have ? run_summary.at("tree") : json::array(), apps = have ? run_summary.at("apps") : json::array();
    for (const auto& n : tree)
      if (!n.at("parent").get<std::string>().empty()) seen.insert(n.at("name").get<std::string>());
    last_nodes = seen;
    const bool cancelled = shared.cancel_running.load();
    json done{{"type", "done"}, {"id", job.id}, {"exit_code", rc}, {"directory", dir.string()},
              {"results", results.empty() ? json() : json(results)}};
    if (cancelled) done["cancelled"] = true;
    if (!error.empty()) done["error"] = error;
    if (calibrated_here) done["calibration"] = calibration;
    spdlog::info("{}: experiment {} ended with exit code {}", o.name, job.id, rc);
    {
      std::lock_guard lock(shared.mu);
      json summary{{"id", job.id}, {"name", job.name}, {"exit_code", rc}, {"apps", apps}};
      if (cancelled) summary["cancelled"] = true;
      if (!results.empty()) summary["report"] = "jobs/" + std::to_string(job.id) + "/report.html";
      job.client = shared.running_client;  // the submitter's connection now (watch)
      if (!tree.empty()) shared.tree = tree;
      shared.finished.push_back(std::move(summary));
      if (shared.finished.size() > finished_kept) shared.finished.pop_front();
      shared.running = json();
    }
    // Output files (docs/command-tasks.md): "done" says how many; a client that takes them
    // fetches each one, chunk by chunk, from the job's directory.
    std::uint64_t sent_outputs = 0;
    if (job.outputs) {
      Shared::Outputs files{job.id, job.client, OutputFiles::finished(m.out_dir)};
      sent_outputs = files.files.size();
      std::lock_guard lock(shared.mu);
      if (sent_outputs > 0) shared.outputs.push_back(std::move(files));
      if (shared.outputs.size() > finished_kept) shared.outputs.pop_front();
    }
    done["outputs"] = sent_outputs;
    try {
      store.save_done(job, done);
    } catch (const std::exception& e) {
      spdlog::error("{}: experiment {}: {}", o.name, job.id, e.what());
    }
    {  // only now: a "watch" in between finds it running, or after this its record done
      std::lock_guard lock(shared.mu);
      shared.running_id = 0;
      job.client = shared.running_client;
    }
    if (!job.client.empty()) shared.send(job.client, done);
    if (rc == node::exit_interrupted && !cancelled) break;  // the master was stopped (SIGINT/SIGTERM)
  }
  serving = nullptr;
  spdlog::info("{}: no longer serving", o.name);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the last answers leave
  return 0;
}

}  // namespace treefarm::master
