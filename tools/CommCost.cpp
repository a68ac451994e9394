#include "tools/CommCost.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace treefarm::tools {
namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct KeyPair {
  std::array<char, 41> pub{}, sec{};
};

KeyPair make_keys() {
  KeyPair k;
  if (zmq_curve_keypair(k.pub.data(), k.sec.data()) != 0) throw std::runtime_error("zmq_curve_keypair failed");
  return k;
}

}  // namespace

CommCost measure_comm_cost(std::uint64_t message_bytes, bool curve, int repetitions, double seconds_per_rep) {
  if (message_bytes == 0) message_bytes = 1;
  repetitions = std::max(repetitions, 1);
  // The receiver's context and the sender's: one I/O thread each, as two processes have.
  zmq::context_t rctx(1), sctx(1);
  zmq::socket_t pull(rctx, zmq::socket_type::pull), push(sctx, zmq::socket_type::push);
  if (curve) {
    const KeyPair server = make_keys(), client = make_keys();
    pull.set(zmq::sockopt::curve_server, 1);
    pull.set(zmq::sockopt::curve_secretkey, std::string(server.sec.data()));
    push.set(zmq::sockopt::curve_serverkey, std::string(server.pub.data()));
    push.set(zmq::sockopt::curve_publickey, std::string(client.pub.data()));
    push.set(zmq::sockopt::curve_secretkey, std::string(client.sec.data()));
  }
  pull.bind("tcp://127.0.0.1:*");
  push.connect(pull.get(zmq::sockopt::last_endpoint));
  const std::vector<char> payload(message_bytes, 'x');

  // Warm-up (connection, CURVE handshake, buffers), then timed rounds of a fixed count.
  const auto round = [&](std::uint64_t count) {
    std::thread sender([&] {
      for (std::uint64_t i = 0; i < count; ++i) {
        zmq::message_t m(const_cast<char*>(payload.data()), payload.size(), [](void*, void*) {}, nullptr);
        push.send(m, zmq::send_flags::none);
      }
    });
    zmq::message_t in;
    for (std::uint64_t i = 0; i < count; ++i)
      if (!pull.recv(in)) throw std::runtime_error("comm cost: receive failed");
    sender.join();
  };
  const double w0 = wall_seconds();
  round(4);
  const double per_message = std::max(1e-7, (wall_seconds() - w0) / 4);
  const auto count = static_cast<std::uint64_t>(std::clamp(seconds_per_rep / per_message, 8.0, 100000.0));

  std::vector<double> cpu, rate;
  for (int r = 0; r < repetitions; ++r) {
    const double c0 = process_cpu_seconds(), t0 = wall_seconds();
    round(count);
    const double c1 = process_cpu_seconds(), t1 = wall_seconds();
    const double bytes = static_cast<double>(count * message_bytes);
    cpu.push_back((c1 - c0) / bytes);
    rate.push_back(bytes / std::max(1e-9, t1 - t0));
  }
  CommCost out;
  out.repetitions = repetitions;
  std::vector<double> sorted = cpu;
  std::sort(sorted.begin(), sorted.end());
  out.cpu_seconds_per_byte = sorted[sorted.size() / 2];
  out.spread = out.cpu_seconds_per_byte > 0 ? (sorted.back() - sorted.front()) / out.cpu_seconds_per_byte : 0;
  const auto median_at = static_cast<std::size_t>(std::find(cpu.begin(), cpu.end(), out.cpu_seconds_per_byte) - cpu.begin());
  out.bytes_per_second = rate[median_at];
  return out;
}

}  // namespace treefarm::tools
