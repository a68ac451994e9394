// treefarm probe (docs/commands.md, docs/machines-file.md): measures a MACHINES.toml on
// running workers — each worker's speed per core, and for every ordered pair of workers
// the bandwidth and round trip from one to the other, measured by the receiving worker
// itself on request (msg::ProbeRequest → msg::ProbeReport, runtime/zmq/PeerProber.hpp).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/plan/MachineSet.hpp"
#include "runtime/zmq/Curve.hpp"
#include "runtime/zmq/TreeQueryClient.hpp"
#include "runtime/zmq/Wire.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct ProbeOptions {
  std::vector<std::string> workers;  ///< tcp://HOST:PORT or NAME=tcp://HOST:PORT
  std::string tree;                  ///< or: any node of a tree, every computing node is probed
  std::string out;
  std::uint64_t bytes = 4ull << 20;
  std::uint32_t rounds = 3;
  double timeout = 60;
  bool json = false;
  bool no_speed = false;
  std::string curve_secret, keys_dir;
  std::string lan = "probed";
  std::string command_line;
};

using Clock = std::chrono::steady_clock;

struct Worker {
  std::string endpoint;
  std::string name;
  std::string key;  ///< Z85 public key of its listener (CURVE)
  std::uint32_t cores = 0;
  double speed = 0;
};

/// One DEALER per worker: a request, then its report.
class Requester {
 public:
  explicit Requester(std::optional<net::KeyPair> own) : own_(std::move(own)) {}
  ~Requester() {
    sockets_.clear();
    ctx_.close();
  }
  net::msg::ProbeReport ask(const Worker& w, const net::msg::ProbeRequest& request, double timeout) {
    auto& slot = sockets_[w.endpoint];
    if (!slot) {
      slot = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::dealer);
      net::configure_socket(*slot, false);
      slot->set(zmq::sockopt::linger, 0);
      net::CurveConfig c;
      if (own_) {
        c.enabled = true;
        c.own = *own_;
        c.parent_public_key = w.key;
      }
      net::apply_curve_client(*slot, c);
      slot->connect(w.endpoint);
    }
    if (!net::send(*slot, request)) throw std::runtime_error("cannot send to " + w.endpoint);
    const auto t0 = Clock::now();
    while (true) {
      const double left = timeout - std::chrono::duration<double>(Clock::now() - t0).count();
      if (left <= 0) break;
      zmq_pollitem_t item{static_cast<void*>(*slot), 0, ZMQ_POLLIN, 0};
      // At most 100 ms at a time, and a signal's EINTR is no error: Ctrl-C is seen at once.
      if (zmq_poll(&item, 1, std::clamp<long>(static_cast<long>(left * 1000), 1, 100)) < 0 && zmq_errno() != EINTR)
        throw zmq::error_t();
      if (interrupted()) throw cli_support::Interrupted("interrupted while probing; no machines file written");
      if (!(item.revents & ZMQ_POLLIN)) continue;
      auto got = net::try_receive(*slot, false);
      if (!got) continue;
      auto* r = std::get_if<net::Received>(&*got);
      if (!r) break;
      if (auto* report = std::get_if<net::msg::ProbeReport>(&r->message)) return std::move(*report);
    }
    sockets_.erase(w.endpoint);
    throw std::runtime_error(w.endpoint + " (" + w.name + ") sent no probe report within " + std::to_string(timeout) +
                             " s: is it a treefarm-worker of this version" +
                             (own_ ? std::string(", and is the prober's key in its authorized_keys?") : std::string("?")));
  }

 private:
  zmq::context_t ctx_{1};
  std::optional<net::KeyPair> own_;
  std::map<std::string, std::unique_ptr<zmq::socket_t>> sockets_;
};

std::vector<Worker> parse_workers(const ProbeOptions& o) {
  std::vector<Worker> out;
  std::set<std::string> seen;
  for (const auto& item : o.workers) {
    Worker w;
    const auto eq = item.find('=');
    if (eq != std::string::npos && item.find("://") > eq) {
      w.name = item.substr(0, eq);
      w.endpoint = item.substr(eq + 1);
    } else {
      w.endpoint = item;
    }
    if (w.endpoint.rfind("tcp://", 0) != 0)
      throw cli_support::UsageError("--workers: '" + item + "' is not tcp://HOST:PORT or NAME=tcp://HOST:PORT");
    if (!seen.insert(w.endpoint).second) throw cli_support::UsageError("--workers: " + w.endpoint + " is given twice");
    if (!o.keys_dir.empty()) {
      if (w.name.empty())
        throw cli_support::UsageError("--keys: name every worker (--workers NAME=tcp://HOST:PORT) so that its key NAME.key is found");
      w.key = cli_support::load_input(
          [&] { return net::load_public_key_file((std::filesystem::path(o.keys_dir) / (w.name + ".key")).string()); });
    }
    out.push_back(std::move(w));
  }
  return out;
}

/// Every node of the tree reachable from `o.tree` that computes (cores > 0), breadth-first.
/// Under CURVE (`own`) `o.tree` is NAME=tcp://HOST:PORT: the key of the node there is
/// NAME.key in --keys; every other node's key comes with the answers (msg::TreeInfo carries
/// the node's own, its parent's and its children's), as `--parent auto` learns them.
std::vector<Worker> discover(const ProbeOptions& o, const std::optional<net::KeyPair>& own) {
  zmq_node::TreeQueryClient client;
  std::map<std::string, std::string> key_of;  // endpoint -> listener key (CURVE)
  const auto learn_key = [&](const std::string& endpoint, const std::string& key) {
    if (!own || endpoint.empty() || key.empty()) return;
    key_of.emplace(endpoint, key);
    client.server_key(endpoint, key);
  };
  const auto eq = o.tree.find('=');
  const bool named = eq != std::string::npos && o.tree.find("://") > eq;
  const std::string entry = named ? o.tree.substr(eq + 1) : o.tree;
  if (own) {
    if (!named)
      throw cli_support::UsageError("--tree: under CURVE name the node (--tree NAME=tcp://HOST:PORT) so that its key "
                                    "NAME.key is found in --keys");
    client.set_curve(*own);
    learn_key(entry, cli_support::load_input([&] {
      return net::load_public_key_file((std::filesystem::path(o.keys_dir) / (o.tree.substr(0, eq) + ".key")).string());
    }));
  }
  if (entry.rfind("tcp://", 0) != 0) throw cli_support::UsageError("--tree: '" + o.tree + "' is not tcp://HOST:PORT");
  std::vector<Worker> out;
  std::set<std::string> asked, names;
  std::deque<std::string> queue{entry};
  while (!queue.empty() && asked.size() < 1024) {
    const auto ep = queue.front();
    queue.pop_front();
    if (ep.empty() || !asked.insert(ep).second) continue;
    auto a = client.ask(ep, 0, 10);
    if (!a) {
      if (ep == entry)
        throw std::runtime_error("--tree " + entry + ": no treefarm node answered there within 10 s" +
                                 (own ? std::string(" (under CURVE: is the prober's key in its authorized_keys, and "
                                                    "NAME.key that node's key?)")
                                      : std::string()));
      spdlog::warn("probe: {} did not answer; skipped", ep);
      continue;
    }
    if (!names.insert(a->info.name).second) continue;
    learn_key(a->info.parent_endpoint, a->info.parent_public_key);
    queue.push_back(a->info.parent_endpoint);
    for (const auto& c : a->info.children) {
      learn_key(c.endpoint, c.public_key);
      queue.push_back(c.endpoint);
    }
    std::string key;
    if (own) {
      const auto k = key_of.find(ep);
      key = k != key_of.end() ? k->second : a->info.public_key;
    }
    if (a->info.cores > 0) out.push_back({ep, a->info.name, key, a->info.cores, 0});
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run_probe(const ProbeOptions& o) {
  const auto t0 = Clock::now();
  if (o.workers.empty() == o.tree.empty()) throw cli_support::UsageError("give either --workers or --tree");
  if (!o.out.empty()) {  // before anything is measured
    const auto dir = std::filesystem::absolute(o.out).parent_path();
    if (!std::filesystem::is_directory(dir))
      throw std::runtime_error("--out " + o.out + ": its folder " + dir.string() + " does not exist");
  }
  std::optional<net::KeyPair> own;
  if (!o.curve_secret.empty()) {
    if (o.keys_dir.empty()) throw cli_support::UsageError("--curve-secret needs --keys DIR (the workers' NAME.key files)");
    own = cli_support::load_input([&] { return net::load_secret_key_file(o.curve_secret); });
  } else if (!o.keys_dir.empty()) {
    throw cli_support::UsageError("--keys needs --curve-secret (the prober's own key pair)");
  }
  std::vector<Worker> workers = o.tree.empty() ? parse_workers(o) : discover(o, own);
  if (workers.size() < 2) throw std::runtime_error("probe needs at least 2 workers, found " + std::to_string(workers.size()));
  Requester requester(own);
  // A report comes after at most 2·rounds questions of `timeout` each (a speed: ~1 s).
  const double report_wait = 2.0 * o.rounds * o.timeout + 30;

  // Who answers where: a speed request (or an empty link request) names each worker.
  for (auto& w : workers) {
    net::msg::ProbeRequest speed;
    speed.rounds = 1;
    speed.timeout = o.timeout;
    if (o.no_speed) {  // a link to itself: the name and cores only
      speed.target = w.endpoint;
      speed.target_key = w.key;
    }
    auto r = requester.ask(w, speed, report_wait);
    if (!r.ok) throw std::runtime_error(w.endpoint + " (" + r.node + "): " + r.error);
    if (!w.name.empty() && w.name != r.node)
      throw std::runtime_error(w.endpoint + ": the node there is '" + r.node + "', not '" + w.name + "'");
    w.name = r.node;
    w.cores = r.cores;
    w.speed = r.speed;
    if (!o.json)
      std::cerr << "probe: " << w.name << " at " << w.endpoint << ": " << w.cores << " cores"
                << (o.no_speed ? std::string() : ", " + std::to_string(w.speed / 1e9) + " Gflop/s per core") << "\n";
  }
  const std::size_t n = workers.size();
  plan::MachineSet set;
  set.lans.push_back({o.lan, 0, 0});
  set.pair_bandwidth.assign(n, std::vector<double>(n, 0.0));
  set.pair_latency.assign(n, std::vector<double>(n, -1.0));
  nlohmann::json links = nlohmann::json::array();
  std::vector<std::vector<double>> bw(n, std::vector<double>(n, 0.0)), rtt(n, std::vector<double>(n, 0.0));
  for (std::size_t to = 0; to < n; ++to)
    for (std::size_t from = 0; from < n; ++from) {
      if (from == to) continue;
      net::msg::ProbeRequest q{workers[from].endpoint, workers[from].key, o.bytes, o.rounds, o.timeout};
      auto r = requester.ask(workers[to], q, report_wait);
      if (!r.ok) throw std::runtime_error(workers[to].name + " could not measure the link from " + workers[from].name + ": " + r.error);
      bw[from][to] = r.bandwidth;
      rtt[from][to] = r.round_trip;
      links.push_back({{"from", workers[from].name}, {"to", workers[to].name}, {"bandwidth", r.bandwidth},
                       {"round_trip", r.round_trip}});
      if (!o.json)
        std::cerr << "probe: " << workers[from].name << " -> " << workers[to].name << ": " << r.bandwidth / 1e6
                  << " MB/s, round trip " << r.round_trip * 1e3 << " ms\n";
    }
  // The file's pairs are symmetric: the slower direction, half the smaller round trip.
  std::vector<double> all_bw, all_lat;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const double b = std::min(bw[i][j], bw[j][i]);
      const double l = std::min(rtt[i][j], rtt[j][i]) / 2;
      set.pair_bandwidth[i][j] = set.pair_bandwidth[j][i] = b;
      set.pair_latency[i][j] = set.pair_latency[j][i] = l;
      all_bw.push_back(b);
      all_lat.push_back(l);
    }
  set.lans[0].bandwidth = median(all_bw);
  set.lans[0].latency = median(all_lat);
  for (const auto& w : workers) {
    plan::Machine m;
    m.name = w.name;
    m.cores = std::max<std::uint32_t>(w.cores, 1);
    m.speed = o.no_speed ? 1e9 : w.speed;
    set.machines.push_back(m);
  }
  set.lan_bandwidth.assign(1, std::vector<double>(1, 0.0));
  set.lan_latency.assign(1, std::vector<double>(1, 0.0));
  plan::validate(set);
  const std::string text = plan::to_toml(set, o.command_line + "\n" + std::to_string(n) + " workers measured by treefarm probe: " +
                                                  "pairs = the slower direction, latency = half the smaller round trip" +
                                                  (o.no_speed ? "; speeds NOT measured (1 Gf placeholders)" : ""));
  if (!o.out.empty()) {
    const std::string tmp = o.out + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << text;
      if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
    }
    std::filesystem::rename(tmp, o.out);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (o.json) {
    nlohmann::json j{{"seconds", seconds}, {"bytes", o.bytes}, {"rounds", o.rounds}, {"links", links}};
    j["machines"] = nlohmann::json::array();
    for (const auto& w : workers)
      j["machines"].push_back({{"name", w.name}, {"endpoint", w.endpoint}, {"cores", w.cores}, {"speed", w.speed}});
    if (!o.out.empty()) j["out"] = o.out;
    else j["machines_toml"] = text;
    std::cout << j.dump(2) << "\n";
  } else if (o.out.empty()) {
    std::cout << text;
  } else {
    std::cerr << "probe: wrote " << o.out << " (" << n << " machines, " << links.size() << " links, " << seconds << " s)\n";
  }
  return 0;
}
}  // namespace

void add_probe_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<ProbeOptions>();
  auto* probe = app.add_subcommand(
      "probe",
      "Measure a MACHINES.toml on running workers: speed per core, and bandwidth and latency between every two of them "
      "(each worker measures the links to itself on request). docs/machines-file.md");
  probe->add_option("--workers", o->workers, "The workers' listening endpoints: tcp://HOST:PORT or NAME=tcp://HOST:PORT, comma-separated")
      ->delimiter(',');
  probe->add_option("--tree", o->tree, "Or: any node of a running tree, tcp://HOST:PORT (under CURVE NAME=tcp://HOST:PORT, its key NAME.key in --keys; the others' keys come with the tree's answers); every node that computes is probed");
  probe->add_option("--out", o->out, "Write the MACHINES.toml here (default: print it)");
  probe->add_option("--bytes", o->bytes, "bytes per bandwidth probe")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, net::max_tree_probe_bytes));
  probe->add_option("--rounds", o->rounds, "probes per link (the fastest counts) and empty round trips (the smallest counts)")
      ->capture_default_str()
      ->check(CLI::Range(1u, net::max_probe_rounds));
  probe->add_option("--timeout", o->timeout, "seconds a worker waits for each answer of the node it measures")->capture_default_str()->check(treefarm::cli_support::positive_number());
  probe->add_option("--lan", o->lan, "Name of the LAN the machines are written in")->capture_default_str();
  probe->add_flag("--no-speed", o->no_speed, "Do not measure speeds (each worker would run a matmul for ~1 s); writes 1 Gf per core");
  probe->add_flag("--json", o->json, "Print one JSON object (machines, links, seconds; the file under machines_toml unless --out)");
  probe->add_option("--curve-secret", o->curve_secret, "Under CURVE: the prober's key pair (its public key must be in every worker's authorized_keys)")
      ->check(CLI::ExistingFile);
  probe->add_option("--keys", o->keys_dir, "Under CURVE: directory of the workers' public keys, NAME.key (treefarm keygen); with --tree only the named entry node's is read")
      ->check(CLI::ExistingDirectory);
  out.push_back({probe, [o, probe] {
                   std::ostringstream cmd;
                   cmd << "treefarm probe";
                   for (const auto* opt : probe->get_options())
                     if (opt->count() > 0 && opt->get_name() != "--help") {
                       cmd << " " << opt->get_name();
                       if (opt->get_type_size() != 0)
                         for (const auto& r : opt->results()) cmd << " " << r;
                     }
                   o->command_line = cmd.str();
                   return run_probe(*o);
                 }});
}

}  // namespace treefarm::cli
