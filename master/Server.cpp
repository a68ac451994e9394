#include "master/Server.hpp"

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

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "runtime/core/Policy.hpp"
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
/// Input files one submission may bring (a command's input_file, issue 20).
constexpr std::size_t max_input_files = 64;
/// Finished experiments kept for `treefarm status`.
constexpr std::size_t finished_kept = 20;

std::atomic<zmq_node::ZmqNode*> serving{nullptr};

struct Job {
  std::uint64_t id = 0;
  std::string client;  ///< routing identity of the submitter
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
};

/// What the loop thread and the channel thread share (under `mu`).
struct Shared {
  std::mutex mu;
  std::deque<Job> queue;
  /// To a client: a JSON text, and with `file` a second frame holding that file's bytes
  /// (an output file, read only when it is sent).
  struct Out {
    std::string client, text;
    std::filesystem::path file = {};
  };
  std::vector<Out> outbox;
  json running;                                             ///< null between runs
  json tree = json::array();                                ///< the last run's nodes
  std::vector<std::string> waiting;                         ///< children waiting for the next run
  std::deque<json> finished;
  std::uint64_t next_id = 1;
  std::uint64_t running_id = 0;           ///< the experiment running now (0: none)
  std::atomic<bool> cancel_running{false};  ///< `treefarm cancel` of the running one (MasterOptions::cancel)
  void send(const std::string& client, const json& j) {
    std::lock_guard lock(mu);
    outbox.push_back({client, j.dump()});
  }
};

/// A file's bytes as one frame (read into the message itself: no second copy).
zmq::message_t read_frame(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return zmq::message_t();
  zmq::message_t m(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  in.read(static_cast<char*>(m.data()), static_cast<std::streamsize>(m.size()));
  return m;
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
  auto ex = model::parse_experiment(full, path);
  model::check_calibration_matches(cal, ex, source);
  if (full_text) *full_text = full;
  return ex;
}

/// The submit/status channel: a ROUTER on its own thread and context.
class Channel {
 public:
  Channel(const ServeOptions& o, std::filesystem::path state, Shared& shared, std::chrono::steady_clock::time_point t0)
      : opt_(o), state_(std::move(state)), shared_(shared), t0_(t0), socket_(ctx_, zmq::socket_type::router) {
    net::configure_socket(socket_, true);
    socket_.set(zmq::sockopt::handshake_ivl, 5000);
    const auto& curve = o.base.curve;
    if (curve.enabled) {
      zap_ = std::make_unique<net::ZapHandler>(ctx_, curve.authorized, o.name + "-submit", curve.authorized_file,
                                               curve.key_names);
      net::apply_curve_server(socket_, curve);
    } else if (!net::is_loopback_endpoint(o.bind) && !o.base.insecure) {
      throw std::invalid_argument("refusing an unencrypted submit channel on a non-loopback address (--bind " + o.bind +
                                  "): give CURVE keys or --insecure");
    }
    socket_.bind(o.bind);
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
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
        for (auto& o : out) {
          try {
            socket_.send(zmq::buffer(o.client), zmq::send_flags::sndmore);
            if (o.file.empty()) {
              socket_.send(zmq::buffer(o.text), zmq::send_flags::none);
              continue;
            }
            zmq::message_t bytes = read_frame(o.file);
            socket_.send(zmq::buffer(o.text), zmq::send_flags::sndmore);
            socket_.send(bytes, zmq::send_flags::none);
          } catch (const zmq::error_t& e) {  // the client left: its results stay in the job directory
            spdlog::warn("{}: could not answer a client: {}", opt_.name, e.what());
          }
        }
      }
      zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
      try {
        zmq::poll(&item, 1, std::chrono::milliseconds(50));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        throw;
      }
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> frames;
      for (bool more = true; more;) {
        zmq::message_t f;
        if (!socket_.recv(f, zmq::recv_flags::dontwait)) break;
        more = f.more();
        frames.push_back(std::move(f));
      }
      if (frames.size() < 2) continue;  // not our client: ignored
      const std::string client = frames[0].to_string();
      try {
        handle(client, json::parse(frames[1].to_string_view()), std::span(frames).subspan(2));
      } catch (const std::exception& e) {
        shared_.send(client, {{"type", "error"}, {"message", e.what()}});
      }
    }
  }

  void handle(const std::string& client, const json& request, std::span<zmq::message_t> files) {
    const std::string type = request.value("type", "");
    if (type == "status") {
      std::lock_guard lock(shared_.mu);
      json queue = json::array();
      std::size_t position = 0;
      for (const auto& j : shared_.queue)
        queue.push_back({{"id", j.id}, {"name", j.name}, {"policy", j.policy}, {"position", ++position},
                         {"waiting_seconds", now() - j.submitted}});
      json finished = json::array();
      for (const auto& f : shared_.finished) finished.push_back(f);
      json reply{{"type", "status"},
                 {"serving", opt_.name},
                 {"tree", shared_.tree},
                 {"waiting", shared_.waiting},
                 {"running", shared_.running},
                 {"queue", queue},
                 {"finished", finished}};
      shared_.outbox.push_back({client, reply.dump()});
      return;
    }
    if (type == "cancel") return cancel(client, request.at("id").get<std::uint64_t>());
    if (type != "submit" && !files.empty()) throw std::invalid_argument("a " + type + " request with file frames");
    if (type != "submit")
      throw std::invalid_argument("unknown request type '" + type + "' (expected submit, status or cancel)");
    Job job;
    job.client = client;
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
    // command's relative input_file resolves there as beside the client's copy (issue 20).
    const auto dir = state_ / ("job-" + std::to_string(job.id));
    model::Experiment ex;
    try {
      std::filesystem::create_directories(dir);
      write_inputs(dir, request.value("inputs", json::array()), files);
      // Refused at once if it does not parse (file, line, field), not when its turn comes.
      ex = model::parse_experiment(job.live_tree ? job.text + stand_in_master(opt_.name) : job.text,
                                   (dir / job.name).string());
      if (!job.policy.empty()) (void)core::make_policy(job.policy, {});  // an unknown policy name throws here
      // A calibration sent along is checked now too: a live tree's gives the tree's shape.
      if (!job.calibration.empty()) {
        const std::string source = "(the calibration sent with " + job.name + ")";
        (void)experiment_with(job.text, job.live_tree, model::parse_calibration(job.calibration, source), opt_.name,
                              source, (dir / job.name).string());
      }
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

  /// The input files a submission brought (`inputs`: [{path, bytes}], one frame each, in
  /// order), written under the job's directory; each path relative and inside it.
  static void write_inputs(const std::filesystem::path& dir, const json& inputs, std::span<zmq::message_t> files) {
    if (!inputs.is_array() || inputs.size() != files.size() || files.size() > max_input_files)
      throw std::invalid_argument("a submission with " + std::to_string(files.size()) + " file frames for " +
                                  std::to_string(inputs.is_array() ? inputs.size() : 0) + " inputs (at most " +
                                  std::to_string(max_input_files) + ")");
    for (std::size_t i = 0; i < files.size(); ++i) {
      const std::filesystem::path rel(inputs[i].at("path").get<std::string>());
      bool inside = !rel.empty() && rel.is_relative();
      for (const auto& part : rel) inside = inside && part != ".." && !part.empty();
      if (!inside) throw std::invalid_argument("input file '" + rel.string() + "': not a path inside the experiment's folder");
      if (inputs[i].at("bytes").get<std::uint64_t>() != files[i].size())
        throw std::invalid_argument("input file '" + rel.string() + "': its frame does not have the size announced");
      const auto path = dir / rel.lexically_normal();
      std::filesystem::create_directories(path.parent_path());
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(static_cast<const char*>(files[i].data()), static_cast<std::streamsize>(files[i].size()));
      if (!out) throw std::runtime_error("cannot write " + path.string() + " on the master");
    }
  }

  /// `treefarm cancel` (docs/serve.md): a queued experiment leaves the queue (its submitter
  /// gets "done" with cancelled); the running one ends at the master's next tick, its
  /// results.json saying cancelled. Anyone who may submit may cancel.
  void cancel(const std::string& client, std::uint64_t id) {
    std::lock_guard lock(shared_.mu);
    if (shared_.running_id == id) {
      shared_.cancel_running = true;
      spdlog::warn("{}: experiment {} cancelled by a client while running", opt_.name, id);
      shared_.outbox.push_back({client, json{{"type", "cancelled"}, {"id", id}, {"was", "running"}}.dump()});
      return;
    }
    for (auto it = shared_.queue.begin(); it != shared_.queue.end(); ++it) {
      if (it->id != id) continue;
      spdlog::warn("{}: experiment {} cancelled by a client while queued", opt_.name, id);
      shared_.outbox.push_back({it->client, json{{"type", "done"}, {"id", id}, {"exit_code", node::exit_interrupted},
                                                 {"cancelled", true}, {"results", nullptr}, {"outputs", 0}}.dump()});
      shared_.finished.push_back({{"id", id}, {"name", it->name}, {"exit_code", node::exit_interrupted}, {"cancelled", true},
                                  {"apps", json::array()}});
      if (shared_.finished.size() > finished_kept) shared_.finished.pop_front();
      shared_.queue.erase(it);
      shared_.outbox.push_back({client, json{{"type", "cancelled"}, {"id", id}, {"was", "queued"}}.dump()});
      return;
    }
    throw std::invalid_argument("no queued or running experiment " + std::to_string(id));
  }

  const ServeOptions& opt_;
  std::filesystem::path state_;  ///< STATE: job-N/ directories
  Shared& shared_;
  std::chrono::steady_clock::time_point t0_;
  zmq::context_t ctx_{1};
  std::unique_ptr<net::ZapHandler> zap_;
  zmq::socket_t socket_;
  std::string endpoint_;
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
  if (auto* root = serving.load()) root->stop();
}

int serve(const ServeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  std::filesystem::path state = o.state_dir;
  if (state.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "treefarm-serve-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a directory under " + tmpl);
    state = tmpl;
  }
  std::filesystem::create_directories(state);

  node::NodeOptions node_options;
  node_options.name = o.name;
  node_options.heartbeat_interval = o.base.heartbeat_interval;
  node_options.heartbeat_timeout = o.base.heartbeat_timeout;
  node_options.max_task_losses = o.base.max_task_losses;
  node_options.task_deadline_factor = o.base.task_deadline_factor;
  node_options.task_deadline_floor = o.base.task_deadline_floor;
  node_options.ack_timeout = o.base.ack_timeout;
  node_options.one_port_window = o.base.one_port_window;
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

  Shared shared;
  Channel channel(o, state, shared, t0);
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
      shared.cancel_running = false;
      shared.running = {{"id", job.id}, {"name", job.name}, {"policy", job.policy}, {"live_tree", job.live_tree},
                        {"elapsed", 0}, {"apps", json::array()}};
    }
    const auto dir = state / ("job-" + std::to_string(job.id));
    std::filesystem::create_directories(dir);
    const auto file = dir / job.name;
    const auto write_experiment = [&](const std::string& text) {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << text;
    };
    write_experiment(job.live_tree ? job.text + stand_in_master(o.name) : job.text);
    const auto calibration_file = dir / "calibration.json";
    MasterOptions m = o.base;
    m.experiment = file.string();
    m.out_dir = (dir / "out").string();
    m.policy = job.policy;
    m.live = &root;
    m.progress = false;
    m.table = false;
    m.json_progress = false;
    m.resume = false;
    m.cancel = &shared.cancel_running;
    if (job.live_tree) {  // the tree as it is: the nodes of the last run and those waiting now
      std::set<std::string> expected = last_nodes;
      for (const auto& n : root.waiting_children()) expected.insert(n);
      m.wait_for_nodes = std::max<std::size_t>(1, expected.size());
      m.wait_timeout = std::min(m.wait_timeout, o.live_wait);
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
    shared.send(job.client, {{"type", "started"}, {"id", job.id}});
    spdlog::info("{}: experiment {} ({}) starts", o.name, job.id, job.name);
    int rc = node::exit_error;
    std::string error;
    const auto run = [&](const MasterOptions& options) {
      try {
        return run_master(options);
      } catch (const std::exception& e) {
        error = e.what();
        spdlog::error("{}: experiment {}: {}", o.name, job.id, error);
        return static_cast<int>(node::exit_error);
      }
    };
    // Calibrated in place (docs/serve.md): every node of the tree as it is measures its
    // kernels and its link, as `treefarm calibrate` does, and the file records each node's
    // parent: the tree's shape for the LP.
    std::string calibration = job.calibration;
    bool calibrated_here = false;
    if (!job.calibrate.empty()) {
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
            std::string text;
            (void)experiment_with(job.text, true, model::parse_calibration(calibration, m.calibration), o.name,
                                  m.calibration, file.string(), &text);
            write_experiment(text);
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
    } else if (job.calibrate == "first" && calibrated_here) {  // cancelled while it calibrated
      rc = node::exit_interrupted;
    }
    const std::string results = read_text(std::filesystem::path(m.out_dir) / "results.json");
    // The tree and the figures as the run ended (a run shorter than a tick has no status yet).
    json tree = json::array(), apps = json::array();
    if (auto r = json::parse(results, nullptr, false); !results.empty() && r.is_object()) {
      for (const auto& n : r.value("nodes", json::array())) {
        const std::string parent = n.contains("parent") && n["parent"].is_string() ? n["parent"].get<std::string>() : "";
        if (!parent.empty()) seen.insert(n.value("name", ""));
        tree.push_back({{"name", n.value("name", "")}, {"parent", parent}, {"cores", n.value("cores", 0u)},
                        {"done", n.value("tasks_computed", std::uint64_t{0})}});
      }
      for (const auto& a : r.value("apps", json::array()))
        apps.push_back({{"name", a.value("name", "")}, {"tasks", a.value("tasks", std::uint64_t{0})},
                        {"done", a.value("completed", std::uint64_t{0})}, {"throughput", a.value("throughput", 0.0)},
                        {"predicted", a.contains("predicted") ? a["predicted"] : json()}});
    }
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
      shared.running_id = 0;
      if (!tree.empty()) shared.tree = tree;
      shared.finished.push_back(std::move(summary));
      if (shared.finished.size() > finished_kept) shared.finished.pop_front();
      shared.running = json();
    }
    // Output files (docs/command-tasks.md): each one to a client that takes them, before "done".
    std::uint64_t sent_outputs = 0;
    if (job.outputs) {
      std::error_code ec;
      const auto outputs = std::filesystem::path(m.out_dir) / "outputs";
      std::vector<Shared::Out> files;
      for (const auto& app : std::filesystem::directory_iterator(outputs, ec)) {
        if (!app.is_directory()) continue;
        for (const auto& f : std::filesystem::directory_iterator(app.path(), ec)) {
          if (!f.is_regular_file() || f.path().extension() == ".part") continue;
          json head{{"type", "output"}, {"id", job.id}, {"app", app.path().filename().string()},
                    {"name", f.path().filename().string()}, {"bytes", f.file_size(ec)}};
          files.push_back({job.client, head.dump(), f.path()});
        }
      }
      sent_outputs = files.size();
      std::lock_guard lock(shared.mu);
      for (auto& f : files) shared.outbox.push_back(std::move(f));
    }
    done["outputs"] = sent_outputs;
    shared.send(job.client, done);
    if (rc == node::exit_interrupted && !cancelled) break;  // the master was stopped (SIGINT/SIGTERM)
  }
  serving = nullptr;
  spdlog::info("{}: no longer serving", o.name);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the last answers leave
  return 0;
}

}  // namespace treefarm::master
