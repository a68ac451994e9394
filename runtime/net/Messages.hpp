#pragma once
/// @file Messages.hpp
/// The messages of the wire protocol (docs/protocol.md). Every message is one header
/// frame — a fixed 16-byte header then a body — followed by `payload_frames` payload
/// frames sent without copying (Task: the task's input bytes; Probe, TreeInfo: probe
/// bytes; a Result with `has_output`: a command's output file).

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace treefarm::net {

constexpr std::uint32_t wire_magic = 0x4D524654;  // "TFRM" little-endian
constexpr std::uint16_t wire_version = 6;  ///< 2: Received (transfer acknowledgements); 3: features, batch frames; 4: task placeholders; 5: shared input offers carry flags (copied segments); 6: a copied segment's inputs are read in place, its slots freed on Result/PullReply
/// Feature bit of Hello/Welcome: the sender reads batch frames (runtime/net/Batch.hpp).
constexpr std::uint32_t feature_batches = 1;
constexpr std::size_t header_bytes = 16;
constexpr std::size_t max_body_bytes = 64 * 1024;        ///< bytes, header frame body
constexpr std::size_t max_name_bytes = 128;               ///< bytes, node/app names, strings
constexpr std::size_t max_text_bytes = 2048;              ///< bytes, a command argument, a task's error text
constexpr std::size_t max_argv = 256;                     ///< arguments of a command application
constexpr std::size_t max_apps = 1024;
constexpr std::size_t max_policy_bytes = 60 * 1024;      ///< bytes, one policy message
constexpr std::size_t max_received_ids = 4096;           ///< task ids in one Received
constexpr std::uint64_t max_payload_bytes = 2ull << 30;   ///< bytes, one task's input
constexpr std::uint64_t max_tree_probe_bytes = 64ull << 20;  ///< bytes, one TreeQuery probe
constexpr std::size_t max_tree_children = 256;            ///< children listed in one TreeInfo
constexpr std::size_t max_ancestors = 32;                 ///< entries of Welcome::ancestors
constexpr std::uint32_t max_probe_rounds = 100;           ///< rounds of one ProbeRequest
constexpr std::size_t max_loads = 256;                    ///< node states in one Heartbeat
constexpr std::size_t max_estimates = 128;                ///< online estimates in one Heartbeat

enum class Kind : std::uint16_t {
  hello = 1, welcome = 2, request = 3, task = 4, result = 5, node_joined = 6,
  heartbeat = 7, shutdown = 8, bye = 9, probe = 10, probe_ack = 11, measure = 12, policy = 13, received = 14,
  tree_query = 15, tree_info = 16, pull = 17, pull_reply = 18,
  blame = 19, blame_reply = 20, push = 21, push_reply = 22,
  probe_request = 23, probe_report = 24, capacity = 25,
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
  // Kernel command only (model::AppSpec; docs/command-tasks.md); not sent for the others.
  std::vector<std::string> argv;  ///< program and arguments, each at most max_text_bytes
  double timeout = 0;             ///< seconds (0: no limit)
  std::string expect_digest;      ///< SHA-256 hex of every output, or empty
  /// Each task's output travels back with its Result, up to this many bytes (a larger one
  /// fails the task); 0: not sent back (docs/command-tasks.md, "Output files").
  std::uint64_t max_output_bytes = 0;
  /// Each task's input starts with its placeholders (tasks/TaskEnvelope.hpp): a bag of
  /// files, lines or numbers (docs/command-tasks.md).
  bool task_fields = false;
  // Multi-resource requirements (papers/lee2010 slide 19; docs/migration.md): optional on
  // the wire, in a block after the Welcome's tree repair fields. 0 = "don't care".
  std::uint64_t disk_per_task = 0;  ///< bytes of free disk
  double min_speed = 0;             ///< flop/s per core
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
/// One ancestor of a node, as its descendants need it to rejoin it when the nodes between
/// them die (tree repair, docs/fault-tolerance.md).
struct Ancestor {
  std::string name;
  std::string endpoint;     ///< tcp://HOST:PORT its children connect to (as its own child reached it)
  std::string public_key;   ///< Z85 CURVE public key of its listener ("" = no CURVE)
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
  // Tree repair (docs/protocol.md): optional on the wire, after `features` (a Welcome
  // without them decodes with both empty). Filled by the sending node's driver.
  std::string sender;                 ///< The parent's node name.
  std::vector<Ancestor> ancestors;    ///< The parent's own ancestors, nearest first, up to the root.
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
  std::string error;            ///< at most max_text_bytes (a command's stderr is cut to fit)
  /// A command's output file travels with the result (docs/command-tasks.md, "Output
  /// files"): then one payload frame of exactly `output_bytes` bytes follows the header,
  /// whose SHA-256 gives `checksum`. Optional trailing fields (absent when false: a
  /// Result without output keeps its bytes and its zero payload frames).
  bool has_output = false;
  std::uint64_t output_bytes = 0;  ///< bytes, at most max_payload_bytes
};
/// Child → parent, travelling up to the master: a node joined the tree.
struct NodeJoined {
  std::string name;
  std::string parent;
  std::uint32_t cores = 0;
  std::uint64_t memory = 0;     ///< bytes
};
/// One node's state as `treefarm status` shows it (docs/serve.md).
struct NodeLoad {
  std::string name;
  std::uint32_t cores = 0;        ///< cores it computes on
  std::uint32_t busy_cores = 0;   ///< cores held by its running tasks (≤ cores)
  std::uint32_t queued = 0;       ///< tasks held there and not running (waiting or on their way to a child)
  double load1 = -1;              ///< the machine's 1-minute load average (-1: unknown)
};
/// One online estimate of a node (docs/live-model.md): a figure the node measured from
/// the run's own timings, its spread, and how often its shift test declared a change.
struct Estimate {
  enum class What : std::uint8_t {
    task_seconds = 0,    ///< seconds of one task of application `app` on `node`
    link_bandwidth = 1,  ///< bytes/s of the link from `node`'s parent (measured by the parent)
    /// CPU seconds (user + system, every thread) `node`'s process has used since it
    /// started (getrusage): a running total, `samples` 1, `spread` 0 (the root's
    /// a-posteriori prediction, docs/live-model.md).
    process_cpu_seconds = 2,
    /// CPU seconds the kernels of application `app` have used on `node` since its run
    /// started (the executor threads that ran them, without their waits for a CPU; a
    /// command's program and a task of several cores are not measured, not counted): a running
    /// total, `samples` the tasks counted, `spread` 0 (the a-posteriori prediction's node
    /// rows, docs/live-model.md).
    compute_cpu_seconds = 3,
  };
  std::string node;
  What what = What::task_seconds;
  std::uint16_t app = 0;          ///< index of the application (task_seconds only)
  double mean = 0;                ///< seconds or bytes/s, > 0
  double spread = 0;              ///< standard deviation, same unit, >= 0
  std::uint32_t samples = 0;      ///< samples the estimate is made of (whole run)
  std::uint32_t shifts = 0;       ///< changes its shift test declared so far
};
/// Either way, every heartbeat interval. Child → parent it may carry, as optional
/// trailing lists, the state of the sender and of the nodes below it (at most max_loads)
/// and their online estimates (at most max_estimates); both left out when empty, so an
/// empty Heartbeat keeps its bytes. A child of a tree without heartbeats (a simulation)
/// sends one with its estimates only, every estimate interval.
struct Heartbeat {
  std::vector<NodeLoad> loads = {};
  std::vector<Estimate> estimates = {};
};
/// Parent → child: the run is over; pass it on and exit. With `reset` (a served tree,
/// docs/serve.md) the child passes it on, says Bye, forgets the run and says Hello again
/// on the same connection instead of exiting; a joining child told `reset` waits for the
/// next run as long as its connection lives. `reset` is an optional trailing byte (left
/// out when false, so older Shutdowns keep their bytes; wire version 3 unchanged).
struct Shutdown {
  std::string reason;
  bool reset = false;
};
/// Child → parent: leaving.
struct Bye {};
/// Parent → child: a link probe; `payload_bytes` follow in one payload frame.
struct Probe { std::uint32_t seq = 0; };
/// Child → parent: answer to a Probe (no payload).
struct ProbeAck { std::uint32_t seq = 0; };
/// Child → parent, travelling up to the master: a calibration measurement.
struct Measure {
  /// fallbacks: choices the node's policy made outside its own rule (Policy::fallbacks),
  /// sent once at the end of a run, before Bye.
  /// link_bandwidth is the median of the link's probe rounds; link_bandwidth_min/max
  /// their smallest and largest (bytes/s), link_round_trip the median of their 1-byte
  /// round trips (seconds); all four are sent for a link, the median last.
  enum class What : std::uint8_t {
    task_seconds = 0, link_bandwidth = 1, out_bandwidth = 2, fallbacks = 3,
    link_bandwidth_min = 4, link_bandwidth_max = 5, link_round_trip = 6,
    /// bytes: the mean size of a command's output file on this node, for an application
    /// that sends its outputs back up (`output_file`), sent just before its
    /// task_seconds.
    output_bytes = 7
  };
  std::string node;               ///< Node measured (link: the child end; out_bandwidth: the sender).
  std::string app;                ///< Application (task_seconds and output_bytes only).
  What what = What::task_seconds;
  double value = 0;               ///< seconds, bytes/s (0 = too fast to resolve), or bytes
};
/// Between a parent and a child: a scheduling policy's own message (opaque to the
/// transport; the policy checks it). docs/policies.md.
struct Policy { std::vector<std::uint8_t> payload; };
/// Child → parent: these tasks arrived whole (the acknowledgement that ends a transfer:
/// under the one-port model the parent's port is busy until it comes, and the time from
/// send to acknowledgement is the transfer time the policies learn from).
struct Received { std::vector<std::uint64_t> task_ids; };
/// Anyone → a node's listening socket, outside the tree (`treefarm-worker --parent auto`,
/// docs/planning.md): "describe yourself", answered by one TreeInfo whose payload frame
/// holds `probe_bytes` bytes (a link probe; 0 = none). The asker does not join.
struct TreeQuery { std::uint64_t probe_bytes = 0; };
/// A node's view of itself and its neighbourhood in the live tree: the answer to a
/// TreeQuery (payload: the probe bytes), and child → parent once after Welcome (empty
/// payload) to advertise the child's own listening endpoint.
struct TreeInfo {
  struct App {
    std::string name;
    std::uint64_t bytes = 0;          ///< input bytes per task
    double flops = 0;                 ///< flop per task
    double weight = 1;
    std::uint32_t cores_per_task = 1;
  };
  struct Child {
    std::string name;
    std::string endpoint;             ///< its listening endpoint ("" = not advertised)
    std::uint32_t cores = 0;
    double link_bandwidth = 0;        ///< bytes/s of the link to it (0 = unknown)
    std::string public_key = {};      ///< Z85 CURVE key of its listener ("" = no CURVE)
  };
  std::string name;
  std::string endpoint;               ///< this node's listening endpoint ("" = none)
  std::string parent_endpoint;        ///< "" at the root
  std::uint32_t cores = 0;
  double link_bandwidth = 0;          ///< bytes/s of the link from its parent (0 = unknown)
  std::vector<double> task_seconds;   ///< per app of `apps`: seconds per task here (0 = unknown)
  std::vector<App> apps;              ///< the run's applications (empty before Welcome)
  std::vector<Child> children;        ///< at most max_tree_children
  // CURVE (`--parent auto` under CURVE): optional on the wire, after the children; filled
  // by the ZeroMQ transport, so that a joiner can authenticate the nodes it learns of.
  std::string public_key = {};        ///< this node's listener key ("" = no CURVE)
  std::string parent_public_key = {}; ///< its parent's ("" = root or no CURVE)
};
/// Parent → child, task migration PULL (papers/lee2010 slide 16, docs/migration.md): give
/// back up to `count` waiting tasks whose backfilling counter is >= `nbc`.
struct Pull { std::uint32_t count = 1; std::uint32_t nbc = 0; };
/// Child → parent, the answer to a Pull: these waiting tasks go back to the parent (which
/// still holds their inputs: no payload), with their backfilling counters in `bcs` (same
/// order); `rejected` more of the pull will not come. 0 tasks = a PULL-Reject.
struct PullReply {
  std::vector<std::uint64_t> task_ids;
  std::vector<std::uint32_t> bcs;
  std::uint32_t rejected = 0;
};
/// Parent → child (docs/security.md, "Blame"): the result of task `task_id`
/// this child sent up, said computed by `node`, was proven forged by the master's spot
/// check. The child names who sent it the result (BlameReply), dropping that child of its
/// own or passing the Blame further down.
struct Blame {
  std::uint64_t task_id = 0;
  std::string node;             ///< Result::node of the forged result.
  /// seconds the child may wait for its own child's answer before it answers (0..3600).
  double wait_seconds = 0;
};
/// Child → parent, the answer to a Blame: the node convicted of the forgery (the sender
/// itself, or a node of its subtree it has dropped); "" = it no longer knows who sent it.
struct BlameReply {
  std::uint64_t task_id = 0;
  std::string culprit;
};
/// Child → parent, task migration PUSH (papers/lee2010 slide 16, docs/migration.md): these
/// waiting tasks the child holds, with their backfilling counters (same order), are
/// offered to the parent (which holds their inputs: no payload). Answered by a PushReply.
struct Push {
  std::vector<std::uint64_t> task_ids;  ///< 1 to max_received_ids
  std::vector<std::uint32_t> bcs;
};
/// Parent → child, PUSH: the parent's residual capacity for this child (`free` idle
/// requesters other than the child, 0 to 2^20; the shortest estimated `queue` among
/// them; the parent's NBC), sent when it changes; with `answer`, also the answer to the
/// child's last Push: the `refused` tasks stay with the child, the rest are the parent's.
struct PushReply {
  bool answer = false;
  std::vector<std::uint64_t> refused;   ///< empty unless `answer`
  std::uint32_t free = 0;
  std::uint32_t queue = 0;
  std::uint32_t nbc = 0;
};
/// Child → parent, before its first Request and whenever it changes: what the child's
/// subtree can run and has (papers/lee2010 slides 19-20: a node advertises its resources;
/// core::SubtreeCapacity). The parent sends it a task only of an application it fits.
struct Capacity {
  std::vector<bool> fits;        ///< per application of the Welcome: some node below runs it
  std::uint64_t cores = 0;       ///< totals over the subtree's computing nodes (0 = unknown)
  std::uint64_t memory = 0;      ///< bytes
  std::uint64_t disk = 0;        ///< bytes, free
};
/// A kind number assigned but not defined in this build: never sent, refused on receipt.
template <std::uint16_t K>
struct Unassigned { static constexpr std::uint16_t unassigned_kind = K; };
/// Anyone → a node's listening socket, outside the tree (`treefarm probe`,
/// docs/machines-file.md): measure the link from the node listening at `target` to you
/// (`rounds` TreeQuery probes of `bytes` bytes, after `rounds` empty ones for the round
/// trip), or, with an empty `target`, the speed of your cores. Answered by one ProbeReport.
struct ProbeRequest {
  std::string target;         ///< tcp://HOST:PORT of another node ("" = measure the speed)
  std::string target_key;     ///< Z85 CURVE public key of the target's listener ("" = no CURVE)
  std::uint64_t bytes = 0;    ///< bytes per bandwidth probe, at most max_tree_probe_bytes
  std::uint32_t rounds = 3;   ///< probes of each kind, 1 to max_probe_rounds
  double timeout = 10;        ///< seconds to wait for each answer of the target (> 0, ≤ 3600)
};
/// The answer to a ProbeRequest.
struct ProbeReport {
  std::string node;           ///< the measuring node's name
  std::string target;         ///< as requested
  std::string target_name;    ///< the target node's name, as it answered ("" = speed, or no answer)
  bool ok = false;
  std::string error;          ///< why not, when !ok (at most max_text_bytes)
  double bandwidth = 0;       ///< bytes/s from the target to the measuring node (fastest probe)
  double round_trip = 0;      ///< seconds, smallest round trip of an empty TreeQuery
  double speed = 0;           ///< flop/s per core (speed requests)
  std::uint32_t cores = 0;    ///< the measuring node's computing cores
};
}  // namespace msg

using Message = std::variant<msg::Hello, msg::Welcome, msg::Request, msg::Task, msg::Result,
                             msg::NodeJoined, msg::Heartbeat, msg::Shutdown, msg::Bye, msg::Probe,
                             msg::ProbeAck, msg::Measure, msg::Policy, msg::Received, msg::TreeQuery,
                             msg::TreeInfo, msg::Pull, msg::PullReply, msg::Blame, msg::BlameReply, msg::Push,
                             msg::PushReply, msg::ProbeRequest, msg::ProbeReport, msg::Capacity>;

Kind kind_of(const Message& m);
const char* kind_name(Kind k);

}  // namespace treefarm::net
