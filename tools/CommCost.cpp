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

std::vector<CommRep> measure_comm_reps(std::uint64_t message_bytes, bool curve, int repetitions, double seconds_per_rep) {
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

  std::vector<CommRep> reps;
  for (int r = 0; r < repetitions; ++r) {
    const double c0 = process_cpu_seconds(), t0 = wall_seconds();
    round(count);
    const double c1 = process_cpu_seconds(), t1 = wall_seconds();
    const double bytes = static_cast<double>(count * message_bytes);
    reps.push_back({(c1 - c0) / bytes, bytes / std::max(1e-9, t1 - t0)});
  }
  return reps;
}

CommCost summarize_comm_reps(const std::vector<CommRep>& reps) {
  if (reps.empty()) throw std::invalid_argument("summarize_comm_reps: no repetition");
  std::vector<CommRep> sorted = reps;
  std::sort(sorted.begin(), sorted.end(),
            [](const CommRep& a, const CommRep& b) { return a.cpu_seconds_per_byte < b.cpu_seconds_per_byte; });
  const auto& median = sorted[sorted.size() / 2];
  CommCost out;
  out.repetitions = static_cast<int>(reps.size());
  out.cpu_seconds_per_byte = median.cpu_seconds_per_byte;
  // The middle half's range: a repetition or two inside a copy stall (CommCostSeries) do not
  // set it; with fewer than four repetitions it is the whole range.
  const std::size_t q = sorted.size() / 4;
  out.spread = median.cpu_seconds_per_byte > 0 ? (sorted[sorted.size() - 1 - q].cpu_seconds_per_byte - sorted[q].cpu_seconds_per_byte) /
                                                     median.cpu_seconds_per_byte
                                               : 0;
  out.bytes_per_second = median.bytes_per_second;
  return out;
}

CommCost measure_comm_cost(std::uint64_t message_bytes, bool curve, int repetitions, double seconds_per_rep) {
  return summarize_comm_reps(measure_comm_reps(message_bytes, curve, repetitions, seconds_per_rep));
}

void CommCostSeries::sample(int repetitions) {
  const auto more = measure_comm_reps(message_bytes_, curve_, repetitions, seconds_per_rep_);
  reps_.insert(reps_.end(), more.begin(), more.end());
}

}  // namespace treefarm::tools
