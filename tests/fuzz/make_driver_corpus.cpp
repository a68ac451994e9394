// Writes the seed corpus of fuzz_driver (tests/fuzz/corpus/driver): scripted sessions in
// the input format of fuzz_driver.cpp, built from real encoded messages so that the fuzzer
// starts from inputs that reach deep into the driver. Not part of the build; regenerate with
//   g++ -std=c++20 -I. tests/fuzz/make_driver_corpus.cpp build/runtime/net/libtreefarm_net.a -o /tmp/mk && /tmp/mk tests/fuzz/corpus/driver
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/net/Batch.hpp"
#include "runtime/net/Codec.hpp"

using namespace treefarm::net;
using Bytes = std::vector<std::byte>;

struct Session {
  Bytes b;
  explicit Session(std::uint8_t node) { b.push_back(std::byte{node}); }
  void op(std::uint8_t code, const Bytes& chunk) {
    b.push_back(std::byte{code});
    b.push_back(std::byte{static_cast<std::uint8_t>(chunk.size() & 0xFF)});
    b.push_back(std::byte{static_cast<std::uint8_t>(chunk.size() >> 8)});
    b.insert(b.end(), chunk.begin(), chunk.end());
  }
  /// A lone frame: the payload-length byte, the header frame, the payload.
  void lone(std::uint8_t code, const Message& m, std::size_t payload = 0) {
    Bytes chunk{std::byte{static_cast<std::uint8_t>(payload)}};
    const auto h = encode(m);
    chunk.insert(chunk.end(), h.begin(), h.end());
    chunk.resize(chunk.size() + payload, std::byte{7});
    op(code, chunk);
  }
  void batch(std::uint8_t code, const std::vector<Message>& ms) {
    BatchWriter w;
    for (const auto& m : ms) w.add(m);
    const auto frame = w.take();
    op(code, Bytes(frame.begin(), frame.end()));
  }
  void timer(std::uint16_t centis) { op(5, Bytes(centis, std::byte{0})); }
};

std::uint64_t task(std::uint64_t app, std::uint64_t i) { return (app << 40) | i; }

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  std::vector<Bytes> seeds;
  for (std::uint8_t node : {0, 1, 2, 3}) {  // worker fcfs, root fcfs, worker cgbc, root cgbc
    Session s(node);
    s.lone(0, msg::Request{2});
    s.lone(1, msg::Request{3});
    if (!(node & 1)) {
      s.lone(4, msg::Task{task(0, 0)}, 100);
      s.lone(4, msg::Task{task(1, 3)}, 8);
      s.op(6, Bytes{std::byte{1}});
    }
    s.timer(50);
    s.lone(0, msg::Received{{task(0, 0), task(0, 1)}});
    s.lone(0, msg::Result{task(0, 0), "c0", 0.1, 0, 1, false, ""});
    s.lone(1, msg::NodeJoined{"g", "c1", 1, 0});
    s.batch(2, {msg::Request{1}, msg::Received{{task(0, 2)}}, msg::Result{task(0, 2), "c2", 0.1, 0, -1, false, ""}});
    s.lone(3, msg::Hello{"late", 2, 0, 1});
    s.timer(400);
    s.lone(1, msg::Bye{});
    s.op(7, Bytes(2));
    s.lone(0, msg::Request{1u << 19});
    s.lone(4, msg::Shutdown{"done"});
    seeds.push_back(s.b);
  }
  // Blame below an inner node (kinds 19-20): the root blames c1 for a forged
  // result (the fuzz root calls negative checksums forged) said computed by g, below c1;
  // c1 answers, or stays silent past the timeout; a worker is blamed for a result it
  // passed up from c0, and for one its own executor computed.
  for (const bool answers : {true, false}) {
    Session s(1);
    s.lone(1, msg::NodeJoined{"g", "c1", 1, 0});
    s.lone(1, msg::Request{2});
    s.lone(1, msg::Received{{task(0, 0), task(0, 1)}});
    s.lone(1, msg::Result{task(0, 0), "g", 0.1, 0, -1, false, ""});
    if (answers) s.lone(1, msg::BlameReply{task(0, 0), "g"});
    s.timer(600);
    s.lone(1, msg::Result{task(0, 1), "g", 0.1, 0, 1, false, ""});
    s.lone(2, msg::BlameReply{task(0, 1), "c2"});
    seeds.push_back(s.b);
  }
  {
    Session s(0);
    s.lone(4, msg::Task{task(0, 0)}, 100);
    s.lone(4, msg::Task{task(0, 1)}, 100);
    s.lone(0, msg::Request{1});
    s.op(6, Bytes{std::byte{1}});
    s.lone(0, msg::Received{{task(0, 1)}});
    s.lone(0, msg::Result{task(0, 1), "c0", 0.1, 0, 1, false, ""});
    s.lone(4, msg::Blame{task(0, 1), "c0", 2.5});
    s.lone(4, msg::Blame{task(0, 0), "w", 2.5});
    s.lone(4, msg::Blame{task(0, 9), "x", 0});
    seeds.push_back(s.b);
  }
  {
    // References into a shared input segment none accepted (Batch.hpp add_shared): from
    // the parent (the worker loses it) and from a child (dropped).
    Session s(0);
    BatchWriter w;
    w.add(msg::Task{task(0, 0)}, Bytes(100, std::byte{7}));
    w.add_shared(msg::Task{task(0, 1)}, 0, 100);
    const auto frame = w.take();
    s.op(2, Bytes(frame.begin(), frame.end()));
    s.lone(4, msg::Task{task(0, 2)}, 100);
    s.op(4, Bytes(frame.begin(), frame.end()));
    seeds.push_back(s.b);
  }
  int i = 0;
  for (const auto& seed : seeds) {
    std::ofstream f(dir + "/seed-" + std::to_string(i++), std::ios::binary);
    f.write(reinterpret_cast<const char*>(seed.data()), static_cast<std::streamsize>(seed.size()));
  }
  return 0;
}
