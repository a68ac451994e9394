#include "tools/Bench.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "runtime/model/Experiment.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

namespace {

/// Raw one-way rate: a DEALER in one thread sends `count` messages of `bytes` bytes to a
/// ROUTER in another over TCP loopback. messages/s.
double zmq_one_way_rate(std::uint64_t count, std::size_t bytes) {
  zmq::context_t ctx(1);
  zmq::socket_t rx(ctx, zmq::socket_type::pull);
  rx.set(zmq::sockopt::rcvhwm, 0);
  rx.bind("tcp://127.0.0.1:*");
  const std::string ep = rx.get(zmq::sockopt::last_endpoint);
  std::thread sender([&] {
    zmq::socket_t tx(ctx, zmq::socket_type::push);
    tx.set(zmq::sockopt::sndhwm, 0);
    tx.connect(ep);
    std::vector<char> buf(bytes, 'x');
    for (std::uint64_t i = 0; i < count; ++i) tx.send(zmq::buffer(buf), zmq::send_flags::none);
  });
  zmq::message_t m;
  (void)rx.recv(m);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 1; i < count; ++i) (void)rx.recv(m);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sender.join();
  return static_cast<double>(count - 1) / s;
}

}  // namespace

int bench_dispatch(std::ostream& out, std::uint64_t tasks, std::uint64_t payload_bytes, std::uint32_t buffer, bool json) {
  char tmpl[] = "/tmp/treefarm-bench-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("cannot create a temporary directory");
  const std::filesystem::path dir = tmpl;
  const auto exp_path = dir / "dispatch.toml";
  {
    std::ofstream f(exp_path);
    f << "[[node]]\nname = \"master\"\ncores = 0\n\n[[node]]\nname = \"w1\"\nparent = \"master\"\ncores = 1\n\n"
      << "[[app]]\nname = \"noop\"\nkernel = \"noop\"\nbytes = " << payload_bytes << "\ntasks = " << tasks
      << "\n\n[run]\nbuffer = " << buffer << "\n";
  }
  const double raw = zmq_one_way_rate(1000000, 16);
  const auto ex = model::load_experiment(exp_path.string());
  LaunchOptions lo;
  lo.out_dir = (dir / "out").string();
  lo.quiet = true;
  lo.log_level = "warn";
  std::atomic<bool> never{false};
  const int rc = launch_tree(ex, lo, never);
  if (rc != 0) {
    out << "bench dispatch: the run failed with code " << rc << "\n";
    return rc;
  }
  std::ifstream rf(dir / "out" / "results.json");
  const auto results = nlohmann::json::parse(rf);
  const double duration = results.at("duration").get<double>();
  const double rate = static_cast<double>(tasks) / duration;
  const double raw_after = zmq_one_way_rate(1000000, 16);
  const double raw_mean = (raw + raw_after) / 2;
  if (json) {
    out << nlohmann::json{{"tasks", tasks}, {"payload_bytes", payload_bytes}, {"buffer", buffer},
                          {"dispatch_tasks_per_s", rate}, {"zmq_one_way_msgs_per_s", raw_mean},
                          {"ratio", rate / raw_mean}}.dump(1)
        << "\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof line,
                  "no-op dispatch, master -> 1 worker, %llu tasks of %llu bytes, buffer %u:  %.0f tasks/s\n"
                  "raw ZeroMQ one-way, 16-byte messages, TCP loopback (mean before/after): %.0f msgs/s\n"
                  "ratio dispatch / raw: %.4f\n",
                  static_cast<unsigned long long>(tasks), static_cast<unsigned long long>(payload_bytes), buffer, rate,
                  raw_mean, rate / raw_mean);
    out << line;
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace treefarm::tools
