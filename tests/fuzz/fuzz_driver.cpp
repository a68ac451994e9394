/// @file fuzz_driver.cpp
/// The node driver fuzz target: arbitrary frames from a child and from the
/// parent, decoded as the ZeroMQ adapter decodes them (lone header frames with
/// runtime/net/Codec, batch frames with runtime/net/Batch), fed into a NodeDriver over a
/// recording Transport, between timer ticks and local job completions. Whatever arrives,
/// the driver may drop a peer or lose its parent, never throw or crash (ASan + UBSan watch
/// the memory). Input: byte 0 picks the node (even: an inner worker with a parent and
/// children; odd: the root) and its policy; then records of
///   u8 op, u16 length (little-endian), `length` bytes
/// where op % 8 is: 0-3 a frame from child peer op%4 (0-1: lone frame, payload = the rest
/// after the first byte's count; 2-3: batch frame), 4 a frame from the parent, 5 the timer
/// (time advances by length/100 s), 6 a local job ends (length picks it, byte 0 failed),
/// 7 a child's connection fails. Children 0-2 have said Hello first; 3 has not. Built as libFuzzer's LLVMFuzzerTestOneInput (clang,
/// build/fuzz/fuzz_driver) and, with TREEFARM_FUZZ_ENTRY renamed, into the corpus replay.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/net/Batch.hpp"
#include "runtime/net/Codec.hpp"
#include "runtime/node/NodeDriver.hpp"
#include "tests/fuzz/FuzzDriverStats.hpp"
#include "tests/runtime/node/RecordingTransport.hpp"

#ifndef TREEFARM_FUZZ_DRIVER_ENTRY
#define TREEFARM_FUZZ_DRIVER_ENTRY LLVMFuzzerTestOneInput
#endif

namespace {

using namespace treefarm;
using node::testing::FakeRunner;
using node::testing::RecordingTransport;

/// Bytes of a payload cut from the input (the driver checks sizes, not contents).
node::Payload payload_of(std::span<const std::byte> bytes) {
  return node::share(std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end()));
}

net::msg::Welcome run_welcome(const char* policy) {
  net::msg::Welcome w = node::testing::welcome(3, true, 50);
  w.policy = policy;
  w.sender = "p";
  w.ancestors = {{"m", "tcp://127.0.0.1:1", ""}};
  net::msg::AppInfo second = node::app_to_wire(node::testing::noop_app(20));
  second.name = "two";
  second.bytes = 8;
  w.apps.push_back(second);
  return w;
}

/// Feeds one frame from `from` (nullopt: the parent) the way runtime/zmq does.
/// What the last input did, for the corpus replay (FuzzDriverStats.hpp).
FuzzDriverStats last_stats;

void deliver(node::NodeDriver& d, std::optional<node::PeerId> from, std::span<const std::byte> frame, bool batch,
             double now) {
  auto lost = [&](const std::string& why) {
    if (from) d.on_child_failed(*from, why, now);
    else d.on_parent_lost(why, now);
  };
  auto one = [&](net::Message m, node::Payload p) {
    ++last_stats.messages_delivered;
    if (from) d.on_child_message(*from, std::move(m), std::move(p), now);
    else d.on_parent_message(std::move(m), std::move(p), now);
  };
  if (batch) {
    std::vector<net::BatchEntry> entries;
    try {
      entries = net::decode_batch(frame);
    } catch (const net::DecodeError& e) {
      return lost(e.what());
    }
    // As runtime/zmq's SharedBatch: no shared input segment is accepted here, so a
    // reference into one drops the sender before any entry is delivered.
    for (const auto& e : entries)
      if (e.in_segment) return lost("a reference into a shared input segment, but none was accepted");
    for (auto& e : entries) {
      if (d.finished()) return;
      node::Payload p;
      if (e.has_payload) p = payload_of(frame.subspan(e.payload_offset, e.payload_size));
      one(std::move(e.message), std::move(p));
    }
    return;
  }
  if (frame.empty()) return lost("empty frame");
  // First byte: how many bytes at the end are the payload frame (0 = none).
  const std::size_t payload_bytes = std::min<std::size_t>(std::to_integer<std::size_t>(frame[0]), frame.size() - 1);
  const auto header = frame.subspan(1, frame.size() - 1 - payload_bytes);
  const bool has_payload = std::to_integer<unsigned>(frame[0]) != 0;
  net::Message m;
  try {
    m = net::decode(header, has_payload ? 1 : 0);
  } catch (const net::DecodeError& e) {
    return lost(e.what());
  }
  one(std::move(m), has_payload ? payload_of(frame.last(payload_bytes)) : nullptr);
}

}  // namespace

const FuzzDriverStats& fuzz_driver_last_stats() { return last_stats; }

extern "C" int TREEFARM_FUZZ_DRIVER_ENTRY(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  last_stats = {};
  if (size == 0) return 0;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  const bool root = data[0] & 1;
  static const char* const policies[] = {"fcfs", "cgbc", "pbc", "data-centric"};
  const char* policy = policies[(data[0] >> 1) % 4];

  RecordingTransport transport;
  FakeRunner runner(2);
  node::NodeOptions options;
  options.name = root ? "m" : "w";
  options.heartbeat_interval = 1;
  options.heartbeat_timeout = 3;
  options.task_deadline_floor = 2;
  options.parent_endpoint = "tcp://127.0.0.1:2";
  std::optional<node::RootSetup> setup;
  if (root) {
    node::RootSetup r;
    r.welcome = run_welcome(policy);
    r.apps = {node::app_from_wire(r.welcome.apps[0]), node::app_from_wire(r.welcome.apps[1])};
    r.apps[0].bytes = node::testing::task_bytes;
    r.apps[1].bytes = 8;
    r.payload = [](core::TaskId id) {
      return node::share(std::make_shared<const std::vector<std::byte>>(id.app().value == 0 ? node::testing::task_bytes : 8));
    };
    r.check_result = [](const net::msg::Result& res, const std::string&) {
      node::ResultVerdict v;
      v.forged = res.checksum < 0;  // some results are "caught forging"
      return v;
    };
    setup = std::move(r);
  }
  node::NodeDriver d(options, transport, &runner, std::move(setup));
  double now = 0;
  d.start(now);
  if (!root) d.on_parent_message(run_welcome(policy), {}, now);
  // Children 0-2 join (the fuzzer's frames then reach a joined child's handling); peer 3
  // stays unknown (its first message must be Hello).
  for (std::uint32_t c = 0; c < 3; ++c) d.on_child_message(node::PeerId{c}, net::msg::Hello{"c" + std::to_string(c), 1, 0, 1}, {}, now);
  std::size_t pos = 1;
  std::size_t jobs_done = 0;
  while (pos + 3 <= size && !d.finished()) {
    const unsigned op = data[pos] % 8;
    std::size_t len = data[pos + 1] | (std::size_t{data[pos + 2]} << 8);
    pos += 3;
    len = std::min(len, size - pos);
    const std::span<const std::byte> chunk(bytes + pos, len);
    pos += len;
    now += 0.001;
    if (op < 4) {
      deliver(d, node::PeerId{op}, chunk, op >= 2, now);
    } else if (op == 4) {
      if (!root) deliver(d, std::nullopt, chunk, len > 0 && std::to_integer<unsigned>(chunk[0]) == 'T', now);
    } else if (op == 5) {
      now += static_cast<double>(len) / 100.0;
      d.on_timer(now);
    } else if (op == 6) {
      if (jobs_done < runner.started.size()) {
        const auto& job = runner.started[jobs_done++];
        const bool failed = len > 0 && std::to_integer<unsigned>(chunk[0]) == 0;
        d.on_job_done(job.job, node::JobOutcome{0.01, 0.001, failed ? 0.0 : 1.0, failed, failed ? "boom" : ""}, now);
      }
    } else {
      d.on_child_failed(node::PeerId{static_cast<std::uint32_t>(len % 4)}, "connection closed", now);
    }
    d.flush(now);
    if (auto due = d.next_deadline(); due && now >= *due) d.on_timer(now);
    last_stats.sends += transport.sent.size();
    transport.sent.clear();
  }
  last_stats.jobs_started = runner.started.size();
  return 0;
}
