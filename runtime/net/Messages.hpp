#pragma once
/// @file Messages.hpp
/// The messages of the wire protocol (docs/protocol.md). Every message is one header
/// frame — a fixed 16-byte header then a body — followed by `payload_frames` payload
/// frames sent without copying (only Task has one: the task's input bytes).

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace treefarm::net {

constexpr std::uint32_t wire_magic = 0x4D524654;  // "TFRM" little-endian
constexpr std::uint16_t wire_version = 3;  ///< 2: Received (transfer acknowledgements); 3: features, batch frames
/// Feature bit of Hello/Welcome: the sender reads batch frames (runtime/net/Batch.hpp).
constexpr std::uint32_t feature_batches = 1;
constexpr std::size_t header_bytes = 16;
constexpr std::size_t max_body_bytes = 64 * 1024;        ///< bytes, header frame body
constexpr std::size_t max_name_bytes = 128;               ///< bytes, node/app names, strings
constexpr std::size_t max_apps = 1024;
constexpr std::size_t max_policy_bytes = 60 * 1024;      ///< bytes, one policy message
constexpr std::size_t max_received_ids = 4096;           ///< task ids in one Received
constexpr std::uint64_t max_payload_bytes = 2ull << 30;   ///< bytes, one task's input

enum class Kind : std::uint16_t {
  hello = 1, welcome = 2, request = 3, task = 4, result = 5, node_joined = 6,
  heartbeat = 7, shutdown = 8, bye = 9, probe = 10, probe_ack = 11, measure = 12, policy = 13, received = 14,
};

namespace msg {
/// Child → parent, first message: who it is and what it has.
struct Hello {
  std::string name;
  std::uint32_t cores = 0;
  std::uint64_t memory = 0;     ///< bytes
  std::uint32_t features = 0;   ///< transport features the child reads (feature_batches); set by the transport
};
/// One application as every node needs to know it.
struct AppInfo {
  std::string name;
  std::uint8_t kernel = 0;      ///< model::Kernel as an integer
  std::uint32_t n = 0;
  std::uint64_t bytes = 0;      ///< input bytes per task
  double flops = 0;             ///< flop per task
  double weight = 1;
  std::uint64_t tasks = 0;
  std::uint32_t cores_per_task = 1;
  std::uint64_t memory_per_task = 0;
};
/// What the master knows of one node from a calibration and the LP solution
/// (papers/beaumont2006 §4.1, §5.1.4): passed down so policies need not learn it.
struct NodeHint {
  std::string name;
  double link_bandwidth = 0;            ///< bytes/s of the link from its parent (0 = unknown)
  std::vector<double> task_seconds;     ///< per app: seconds per task there (0 = unknown)
  std::vector<double> alpha;            ///< per app: LP tasks/s computed there
  std::vector<double> received;         ///< per app: LP tasks/s sent to it by its parent
};
/// Parent → child, answer to Hello: the run's configuration.
struct Welcome {
  std::uint32_t buffer = 10;
  std::string policy;
  bool one_port = true;
  std::vector<AppInfo> apps;
  /// Calibration run (treefarm calibrate): every computing node runs each application's
  /// kernel this many times in place and every parent probes the link to each child;
  /// no task is dispatched. 0 = a normal run.
  std::uint32_t calibrate_reps = 0;
  std::uint64_t probe_bytes = 0;      ///< bytes per link probe in a calibration run
  std::uint64_t seed = 1;             ///< Seed of the inputs (calibration inputs too)
  std::vector<NodeHint> hints;        ///< Per node, when the master has a calibration/LP.
  std::uint32_t features = 0;         ///< transport features the parent reads; set by the transport
};
/// Child → parent: `count` more tasks, please.
struct Request { std::uint32_t count = 1; };
/// Parent → child: a task; its input follows in one payload frame.
struct Task { std::uint64_t task_id = 0; };
/// Child → parent, travelling up to the master: a task is done.
struct Result {
  std::uint64_t task_id = 0;
  std::string node;             ///< Name of the node that computed it.
  double compute_seconds = 0;   ///< seconds the kernel ran
  double queued_seconds = 0;    ///< seconds it waited in the executor
  double checksum = 0;
  bool failed = false;          ///< The kernel raised an error (message in `error`).
  std::string error;
};
/// Child → parent, travelling up to the master: a node joined the tree.
struct NodeJoined {
  std::string name;
  std::string parent;
  std::uint32_t cores = 0;
  std::uint64_t memory = 0;     ///< bytes
};
struct Heartbeat {};
/// Parent → child: the run is over; pass it on and exit.
struct Shutdown { std::string reason; };
/// Child → parent: leaving.
struct Bye {};
/// Parent → child: a link probe; `payload_bytes` follow in one payload frame.
struct Probe { std::uint32_t seq = 0; };
/// Child → parent: answer to a Probe (no payload).
struct ProbeAck { std::uint32_t seq = 0; };
/// Child → parent, travelling up to the master: a calibration measurement.
struct Measure {
  /// fallbacks: choices the node's policy made outside its own rule (Policy::fallbacks),
  /// sent once at the end of a run, before Bye (issue 21).
  /// link_bandwidth is the median of the link's probe rounds; link_bandwidth_min/max
  /// their smallest and largest (bytes/s), link_round_trip the median of their 1-byte
  /// round trips (seconds); all four are sent for a link, the median last (issue 21).
  enum class What : std::uint8_t {
    task_seconds = 0, link_bandwidth = 1, out_bandwidth = 2, fallbacks = 3,
    link_bandwidth_min = 4, link_bandwidth_max = 5, link_round_trip = 6
  };
  std::string node;               ///< Node measured (link: the child end; out_bandwidth: the sender).
  std::string app;                ///< Application (task_seconds only).
  What what = What::task_seconds;
  double value = 0;               ///< seconds, or bytes/s (0 = too fast to resolve)
};
/// Between a parent and a child: a scheduling policy's own message (opaque to the
/// transport; the policy checks it). docs/policies.md.
struct Policy { std::vector<std::uint8_t> payload; };
/// Child → parent: these tasks arrived whole (the acknowledgement that ends a transfer:
/// under the one-port model the parent's port is busy until it comes, and the time from
/// send to acknowledgement is the transfer time the policies learn from).
struct Received { std::vector<std::uint64_t> task_ids; };
}  // namespace msg

using Message = std::variant<msg::Hello, msg::Welcome, msg::Request, msg::Task, msg::Result,
                             msg::NodeJoined, msg::Heartbeat, msg::Shutdown, msg::Bye, msg::Probe,
                             msg::ProbeAck, msg::Measure, msg::Policy, msg::Received>;

Kind kind_of(const Message& m);
const char* kind_name(Kind k);

}  // namespace treefarm::net
