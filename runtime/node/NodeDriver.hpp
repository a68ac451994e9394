#pragma once
/// @file NodeDriver.hpp
/// The node driver: everything a node of the tree does besides scheduling, without any
/// I/O of its own. It joins its parent (Hello / Welcome), admits children, keeps them
/// and its parent alive (heartbeats, rejoin with back-off), stores the payloads of the
/// tasks it holds and the results it forwards, measures transfers (one-port for real:
/// a send to a child ends when the child acknowledges it), runs the calibration (kernel
/// runs, link probes), ends the run cleanly (Shutdown down the tree, Bye back up), and
/// feeds the pure scheduler core (runtime/core) with events and carries out its actions.
///
/// It is driven like the core: every entry point takes the time (`now`, seconds on the
/// adapter's clock: steady_clock in the ZeroMQ adapter, simulated time in SimGrid), and
/// next_deadline() says when to call on_timer(). Its outputs go through a Transport and
/// a LocalRunner (runtime/node/Transport.hpp, LocalRunner.hpp). The ZeroMQ adapter
/// (runtime/zmq) and the SimGrid adapter (runtime/sim) are thin: they turn sockets,
/// mailboxes, executors and clocks into these calls.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/core/Events.hpp"
#include "runtime/core/FifoQueue.hpp"
#include "runtime/core/Policy.hpp"
#include "runtime/model/Application.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/BlameLedger.hpp"
#include "runtime/node/CalibrationWindow.hpp"
#include "runtime/node/ExitCode.hpp"
#include "runtime/node/LinkProber.hpp"
#include "runtime/node/LocalRunner.hpp"
#include "runtime/node/Payload.hpp"
#include "runtime/node/TaskMap.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::core { class NodeScheduler; }

namespace treefarm::node {

/// How a node behaves; time values in seconds.
struct NodeOptions {
  std::string name;                 ///< Unique node name.
  std::uint64_t memory = 0;         ///< bytes advertised in Hello (0: not accounted).
  /// This node's other resources for applications' requirements (papers/lee2010 slide
  /// 19, docs/migration.md "Requirements"; 0 = unknown, taken as sufficient).
  std::uint64_t disk = 0;           ///< bytes of free disk
  double speed = 0;                 ///< flop/s per core
  /// Measures `speed` when it is 0 and an application has a min_speed (the ZeroMQ
  /// adapter: a 512x512 matmul, tasks::speed_per_core); empty: left unknown.
  std::function<double()> measure_speed = {};
  double join_timeout = 30;         ///< seconds to wait for the parent's Welcome.
  /// seconds between heartbeats to the parent and the children (0: none — simulations,
  /// where nothing fails, do without them).
  double heartbeat_interval = 1.0;
  double heartbeat_timeout = 6.0;   ///< seconds of silence after which a child is dead.
  /// A worker that loses its parent rejoins it with back-off 0.5 → 8 s for up to this
  /// many seconds counted from the loss (0: exit at once).
  double rejoin_timeout = 60;
  /// A task lost with this many dead children of this node is reported failed.
  std::uint32_t max_task_losses = 3;
  /// Root: give up when no node can compute (no child, no local cores) for this long.
  double orphan_timeout = 30;
  /// seconds to wait for the children's Bye after a Shutdown before ending anyway.
  double shutdown_grace = 2.0;
  /// Task deadlines (core::NodeConfig, docs/fault-tolerance.md): a task a child holds
  /// past max(task_deadline_floor, task_deadline_factor x expected seconds) is re-issued
  /// to another child or the local executor; the first result wins. Factor 0: off.
  double task_deadline_factor = 4;
  double task_deadline_floor = 60;   ///< seconds
  /// seconds a child may take to acknowledge a task transfer (msg::Received), plus four
  /// times the transfer's expected time at the link's known bandwidth. A child that does
  /// not acknowledge in time holds the one-port for nothing: it is dropped and told.
  /// Checked at each heartbeat; 0: never.
  double ack_timeout = 60;
  /// bytes. One-port over a stream transport (not when the transport reports transfers
  /// itself): a task transfer of at most this many bytes frees the port as soon as it is
  /// handed to the transport, while the bytes of such transfers not yet acknowledged stay
  /// within this window — back-to-back small sends on one connection occupy the link for
  /// their bytes, not for a round trip each. Larger transfers hold the port until their
  /// acknowledgement (papers/beaumont2006 §2: a send occupies the port for its size /
  /// bandwidth). 0: every transfer holds the port until acknowledged.
  std::uint64_t one_port_window = model::default_one_port_window;
  /// How this node reaches its parent (the ZeroMQ adapter fills them from --parent and
  /// --parent-key): passed down in Welcome::ancestors so that descendants can rejoin the
  /// parent if this node dies (tree repair, docs/fault-tolerance.md). Empty: not passed.
  std::string parent_endpoint;
  std::string parent_public_key;    ///< Z85 CURVE key of the parent ("" = no CURVE)
  /// What this node knows of itself and its children without the Welcome's hints (a
  /// simulation knows its platform): link bandwidths, task durations, LP rates.
  std::vector<net::msg::NodeHint> known_hints;
  /// This node's listening endpoint as others can reach it ("" = none): told, with
  /// parent_endpoint, to whoever asks (msg::TreeQuery) and, the endpoint, to the parent
  /// after Welcome, so that a worker joining with `--parent auto` can find every node.
  std::string endpoint;
  /// Task migration this node initiates (core::NodeConfig::migration, docs/migration.md):
  /// with pull, an idle node takes waiting tasks back from its children. Every node
  /// answers its parent's pulls whatever its own mode.
  core::MigrationMode migration = core::MigrationMode::off;
  /// Queue balancing over that migration (core::NodeConfig::balance; lee2010 slide 17).
  core::BalanceMode balance = core::BalanceMode::off;
  /// seconds the root waits for a child's BlameReply after a forged result came through it
  /// (docs/security.md, "Blame below an inner node"); each inner node waits half of what
  /// its parent allowed. No answer in time: the child asked is convicted.
  double blame_timeout = 5;
  /// The machine's 1-minute load average, reported with this node's state in heartbeats
  /// (`treefarm status`, issue 20); the ZeroMQ adapter reads sysinfo(2). Unset: unknown.
  std::function<double()> machine_load = {};
  /// Root of a served tree (docs/serve.md): a run that ends normally tells the children
  /// Shutdown with `reset` — they forget the run and say Hello again on the same connection,
  /// ready for the next one — instead of sending them away.
  bool serve = false;
  /// Worker of a served tree whose previous driver ended with a reset on the same
  /// connection (docs/serve.md): messages of the finished run that the parent sent before
  /// it saw this node's new Hello (tasks, probes, policy messages) may still arrive while
  /// it joins; they are ignored instead of being taken for a misbehaving parent.
  bool after_reset = false;
};

/// The root's verdict on a child's result before it is recorded (issue 13, hole 4).
struct ResultVerdict {
  /// The result is proven wrong: it is not recorded, its task is done again, and the root
  /// finds the forger below the child it came through (msg::Blame; RootSetup::convict).
  bool forged = false;
};

/// What only the root has: the run configuration and the bag of tasks.
struct RootSetup {
  net::msg::Welcome welcome;        ///< Sent to every child; also configures the root.
  /// The root's `[policy.NAME]` options for welcome.policy (the other nodes get what they
  /// need from their parent's policy messages: "price" sends its parameters down).
  core::PolicyOptions policy_options;
  std::vector<model::AppSpec> apps;
  /// The input of a task (shared, never copied).
  std::function<Payload(core::TaskId)> payload;
  /// Called for each result a child sends the root, before the core sees it; `via` is the
  /// name of the child it came through (the one held responsible). Unset = accept all.
  std::function<ResultVerdict(const net::msg::Result&, const std::string& via)> check_result;
  /// A forger was found after a forged result (docs/security.md, "Blame below an inner
  /// node"): `culprit` is the node convicted (now dropped by its parent, its name refused
  /// there and here), `via` the root's child its results came through. `whole_child`: the
  /// root holds `via` itself responsible (it was the forger, did not answer the Blame in
  /// time, or answered outside its subtree) and has dropped it — every result that came
  /// through `via` is to be revoked; otherwise only those computed by `culprit` and the
  /// nodes below it. Returns the recorded tasks to do again. Unset: nothing is revoked.
  std::function<std::vector<core::TaskRef>(const std::string& culprit, const std::string& via, bool whole_child)> convict;
  /// A result reached the root; `duplicate` if the task was already recorded.
  std::function<void(const net::msg::Result&, bool duplicate, double now)> on_result;
  /// Output files (docs/command-tasks.md): a child's result carries `output` (exactly
  /// Result::output_bytes bytes, checked by the driver). False: the output does not give
  /// the result's checksum — the result is proven wrong, as a forged one (check_result).
  /// Called before check_result. Unset: accepted.
  std::function<bool(const net::msg::Result&, const Payload& output)> check_output;
  /// A node's state (its own, every heartbeat interval, and each node's below it as its
  /// heartbeats bring them up; `treefarm status`, issue 20).
  std::function<void(const net::msg::NodeLoad&)> on_load;
  /// The output of a result recorded (not a duplicate), called just before on_result.
  std::function<void(const net::msg::Result&, const Payload& output)> on_output;
  /// A node joined somewhere in the tree.
  std::function<void(const net::msg::NodeJoined&)> on_joined;
  /// Called about every `tick_interval` seconds (progress lines).
  std::function<void(double now)> on_tick;
  double tick_interval = 1.0;
  /// Dispatching starts when this many nodes (besides the root) have joined, or after
  /// `wait_timeout` seconds, whichever comes first.
  std::size_t wait_for_nodes = 0;
  double wait_timeout = 60;
  /// Called once when dispatching starts: the time origin of the run.
  std::function<void(double now)> on_start;
  /// Calibration runs: a measurement reached the root (from anywhere in the tree).
  std::function<void(const net::msg::Measure&)> on_measure;
  /// Resumed runs (master --resume): per application, tasks already completed in an
  /// earlier run (core::NodeConfig::done_before; empty = none).
  std::vector<std::vector<bool>> done_before;
};

/// model::AppSpec from the wire description of an application, and back.
model::AppSpec app_from_wire(const net::msg::AppInfo& info);
net::msg::AppInfo app_to_wire(const model::AppSpec& app);

/// Calibration inputs (issue 21): a node's calibration runs of one application take
/// several inputs in turn, together about this many bytes — more than a last-level
/// cache, as a run's inputs arrive fresh from the network — and at most this many inputs.
inline constexpr std::uint64_t calibration_pool_bytes = std::uint64_t{32} << 20;
inline constexpr std::uint64_t calibration_pool_inputs = 8;
/// How many inputs of `input_bytes` bytes the calibration of an application takes in turn.
std::size_t calibration_inputs_for(std::uint64_t input_bytes);

class NodeDriver {
 public:
  /// A worker (no root setup) or the root. `runner` may be null (a node that only
  /// forwards). Throws std::invalid_argument for bad options.
  NodeDriver(NodeOptions options, Transport& transport, LocalRunner* runner, std::optional<RootSetup> root);
  ~NodeDriver();
  NodeDriver(const NodeDriver&) = delete;
  NodeDriver& operator=(const NodeDriver&) = delete;

  /// Starts the node: the root configures itself (and may start dispatching), a worker
  /// sends Hello to its parent.
  void start(double now);

  /// A message (with its payload frame, if any) from the parent.
  void on_parent_message(net::Message message, Payload payload, double now);
  /// The parent sent something undecodable, or its connection closed.
  void on_parent_lost(const std::string& why, double now);
  /// The transport could not connect to the parent (refused, or the CURVE handshake
  /// failed). During a rejoin this moves on to the next ancestor at once; otherwise
  /// (first join: the parent may not be up yet) the join timeout decides.
  void on_parent_unreachable(const std::string& why, double now);
  /// Tree repair: the nodes this one would rejoin, nearest first (its parent, then the
  /// parent's ancestors up to the root), as the last Welcome announced them.
  const std::vector<net::msg::Ancestor>& ancestors() const { return ancestors_; }
  /// Re-parenting (docs/planning.md): leaves the parent cleanly (Bye: it re-queues every
  /// task this subtree holds) and joins `target` through the rejoin path — this node
  /// forgets its tasks, its children rejoin it, and if `target` cannot be joined the old
  /// ancestors are tried. Exactly once holds as after a lost parent. False (nothing done)
  /// unless the node is a running worker with rejoin_timeout > 0 and `target` is not its
  /// parent.
  bool move_to(const net::msg::Ancestor& target, double now);
  /// A message from a child (or a peer that wants to become one).
  void on_child_message(PeerId peer, net::Message message, Payload payload, double now);
  /// A child's message could not be decoded, or its connection is gone: it is dropped.
  void on_child_failed(PeerId peer, const std::string& why, double now);
  /// The local runner finished job `job`.
  void on_job_done(std::uint64_t job, JobOutcome outcome, double now);
  /// The transport saw the transfer of task `task_id` to `peer` end
  /// (Transport::reports_transfers()).
  void on_transfer_done(PeerId peer, std::uint64_t task_id, double now);
  /// Due work: call when now >= next_deadline() (early or late calls are harmless).
  void on_timer(double now);
  /// Sends what was batched while handling a burst of messages (acknowledgements);
  /// adapters call it after each burst.
  void flush(double now);
  /// When on_timer() wants to be called; nullopt: only when a message arrives.
  std::optional<double> next_deadline() const;

  /// Root: ends the run normally (calibration runs end when every measurement is in).
  void finish(double now);
  /// A requested stop (signal): children are told, the parent is left with Bye; the node
  /// ends with `exit_code`.
  void interrupt(double now, int exit_code);

  bool finished() const { return phase_ == Phase::done; }
  /// The run ends (or ended) with a reset (docs/serve.md): the adapter keeps the connections
  /// and, once finished(), starts a new driver on them.
  bool reset_requested() const { return reset_; }
  /// Closing for a reset: a Hello arriving now belongs to the next run (the adapter keeps it).
  bool closing_for_reset() const { return reset_ && phase_ == Phase::closing; }
  int exit_code() const { return exit_code_; }
  /// The scheduler's policy once the node has joined (else null).
  const core::Policy* policy() const;
  /// A worker gave up (parent lost for good) and wants a fresh start: the adapter
  /// restarts its transport through the driver; exposed for logs.
  const std::string& name() const { return opt_.name; }
  /// Children currently joined.
  std::size_t child_count() const;
  /// Sets NodeOptions::endpoint (the adapter knows it once it has bound its socket).
  void set_endpoint(std::string endpoint) { opt_.endpoint = std::move(endpoint); }
  /// What this node tells a msg::TreeQuery: itself, its applications with its task times
  /// (calibrated, else the mean of the tasks it ran, else 0), its children with their
  /// endpoints and known link bandwidths.
  net::msg::TreeInfo tree_info() const;
  /// Root: tasks recorded done so far.
  std::uint64_t completed() const;

 private:
  enum class Phase { joining, running, rejoin_wait, closing, done };
  struct Child;
  struct Job {
    std::optional<core::TaskRef> task;  ///< none: a calibration run
    std::uint64_t epoch = 0;            ///< NodeDriver::epoch_ when started
    std::size_t app = 0;
    std::uint32_t cores = 1;
  };
  struct SendRecord {
    double sent_at = 0;
    double bytes = 0;
    bool alone = true;  ///< no other transfer to the same child in flight at its start (and, sharing transports, during it)
    bool released = false;  ///< freed the port when sent (NodeOptions::one_port_window)
  };

  bool is_root() const { return root_.has_value(); }
  void configure(const net::msg::Welcome& welcome, double now);
  void begin_running(double now);
  void start_dispatching(double now);
  void post(core::Event event);
  void drain(double now);
  void carry_out(core::Action& action, double now);
  void top_up_local();
  void send_task(core::ChildId child, core::TaskRef task, double now);
  void start_local(core::TaskRef task);
  void transfer_done(Child& child, std::uint64_t task_id, double now);
  void admit(PeerId peer, const net::msg::Hello& hello, double now);
  void handle_child(Child& child, PeerId peer, net::Message& message, Payload& payload, double now);
  void drop_child(PeerId peer, const std::string& why, bool tell, double now);
  void node_joined(const net::msg::NodeJoined& joined, double now);
  void report(const net::msg::Measure& measure);
  /// `voluntary`: a re-parenting move (move_to), logged as info, not as an error.
  void parent_lost(const std::string& why, double now, bool voluntary = false);
  net::msg::Welcome welcome_for_children() const;
  void begin_closing(const std::string& reason, double now);
  void maybe_closed(double now);
  void end(int code);
  void heartbeats(double now);
  void check_acknowledgements(double now);
  void start_calibration(double now);
  void submit_calibration();
  void calibration_done(std::size_t app, const JobOutcome& outcome, double now);
  Child* child_by_core(core::ChildId id);
  // Blame below an inner node (issue 13; NodeDriver.cpp, "blame").
  void blame_forgery(Child& child, PeerId peer, const net::msg::Result& forged, double now);
  /// The output going up with the result of `id` (empty if none), taken out of outputs_.
  Payload take_output(core::TaskId id);
  /// This node's state now (cores, busy cores, tasks held and not running, machine load).
  net::msg::NodeLoad own_load() const;
  void on_blame(const net::msg::Blame& blame, double now);
  void on_blame_reply(Child& child, PeerId peer, const net::msg::BlameReply& reply, double now);
  void blame_found(std::uint64_t task_id, const std::string& via, const std::string& culprit, double now);
  void expire_blames(double now);
  // Task migration, PUSH (papers/lee2010 slide 16; NodeDriverPush.cpp).
  void send_push(const core::action::PushTasks& push);
  void send_push_reply(const core::action::SendPushReply& reply);
  void on_push(core::ChildId child, const net::msg::Push& push, double now);
  void on_push_reply(const net::msg::PushReply& reply, double now);
  void log_migration() const;  ///< the migration counters, once at the end (mode not off)

  NodeOptions opt_;
  Transport& transport_;
  LocalRunner* runner_;
  std::optional<RootSetup> root_;

  Phase phase_ = Phase::joining;
  int exit_code_ = exit_ok;
  std::unique_ptr<core::NodeScheduler> sched_;
  net::msg::Welcome welcome_;
  bool configured_ = false;
  std::vector<model::AppSpec> apps_;
  std::map<std::string, double> hint_bandwidth_;  ///< node -> bytes/s of its link (calibration)
  core::FifoQueue<core::Event> events_;  ///< keeps its memory: no allocation per event (issue 14)
  std::vector<core::Action> spare_actions_;  ///< drain()'s action vector, kept for the next event
  bool draining_ = false;

  // Tasks held here and results on their way up (payloads shared, never copied).
  TaskMap<Payload> payloads_;
  TaskMap<net::msg::Result> results_;
  TaskMap<Payload> outputs_;  ///< command outputs going up with results_
  std::vector<std::uint64_t> acks_;  ///< tasks received, acknowledged at the next flush
  std::uint64_t released_bytes_ = 0;  ///< bytes of released transfers not yet acknowledged

  // Local execution.
  IdMap<Job> jobs_;  ///< by value: one allocation per task fewer (issue 14)
  std::uint64_t next_job_ = 1;
  std::uint32_t min_cores_per_task_ = 1;
  std::uint64_t committed_cores_ = 0;
  std::uint32_t local_pending_ = 0;
  std::uint64_t epoch_ = 0;  ///< bumped when the parent is lost: older jobs are ignored

  // Children, by transport peer; core ids are never reused.
  std::map<PeerId, std::unique_ptr<Child>> children_;
  std::size_t sends_in_flight_ = 0;  ///< task transfers to all children, not yet acknowledged
  std::unordered_map<std::uint32_t, PeerId> peer_of_core_;
  std::vector<std::pair<PeerId, net::msg::Hello>> waiting_hellos_;  ///< before this node is configured
  std::vector<std::string> convicted_;  ///< nodes convicted of forging here, refused if they join again
  BlameLedger blame_;                   ///< who sent each result passed up; Blames passed down
  std::deque<std::pair<std::uint32_t, std::string>> departed_;  ///< core id -> name of recent children gone
  std::uint32_t next_core_child_ = 0;

  // Tree repair: the current parent, its ancestors (parent first), and while rejoining the
  // targets of this round of attempts and the one tried now.
  net::msg::Ancestor parent_link_;
  std::vector<net::msg::Ancestor> ancestors_;
  std::vector<net::msg::Ancestor> rejoin_targets_;
  std::size_t rejoin_next_ = 0;

  // Time-driven state (absolute times on the adapter's clock; < 0: not armed).
  double join_deadline_ = -1;
  double rejoin_at_ = -1;
  double lost_at_ = -1;
  double backoff_ = 0.5;
  double next_heartbeat_ = -1;
  double closing_deadline_ = -1;
  double next_tick_ = -1;
  double wait_deadline_ = -1;
  double orphan_since_ = 0;
  bool closing_from_parent_ = false;
  bool reset_ = false;        ///< this run ends with a reset (served tree)
  bool parent_idle_ = false;  ///< joining: the parent serves a tree with no run yet; wait
  int closing_code_ = exit_ok;

  // Root.
  bool dispatching_ = false;
  std::vector<core::Event> deferred_;
  std::size_t joined_nodes_ = 0;

  // Calibration (Welcome.calibrate_reps > 0): kernels, then links.
  bool calibrating_ = false;
  double calib_start_at_ = -1;
  double calib_started_ = 0;
  std::optional<CalibrationWindow> calib_window_;     ///< the runs so far, per app
  /// Per app: the inputs its calibration runs take in turn (calibration_inputs_for), and
  /// the next one's index.
  std::vector<std::vector<Payload>> calib_inputs_;
  std::vector<std::size_t> calib_next_input_;
  /// Per app: bytes of output of its calibration runs so far, and how many (issue 20).
  std::vector<std::pair<double, std::uint64_t>> calib_output_;
  std::unique_ptr<LinkProber> prober_;

  // Per application: seconds and count of the tasks run here (TreeInfo task times).
  std::vector<double> local_seconds_;
  std::vector<std::uint64_t> local_runs_;
};

}  // namespace treefarm::node
