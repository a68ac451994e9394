#pragma once
/// @file NodeDriver.hpp
/// The node driver: everything a node of the tree does besides scheduling, without any
/// I/O of its own. It is a small dispatcher over parts that each own their state:
///
/// - Lifecycle (Lifecycle.hpp): the phases and every transition between them, one table;
/// - Timers (Timers.hpp): every deadline, armed or not;
/// - ParentLink (ParentLink.hpp): join, rejoin with back-off over the ancestors,
///   acknowledgements of received tasks;
/// - Children (Children.hpp): admitted children and the Hellos waiting for admission;
/// - SendLedger (SendLedger.hpp): transfers not yet acknowledged, the one-port window;
/// - RootRole (RootRole.hpp): what only the root has (the run, its hooks, dispatching);
///   a worker has none;
/// - LocalWork (LocalWork.hpp): jobs on the node's own cores;
/// - CalibrationRuns (CalibrationRuns.hpp): kernel runs and link probes of a calibration;
/// - Blame (Blame.hpp): who sent each result, forgers convicted (NodeDriverBlame.cpp);
/// - PUSH task migration (NodeDriverPush.cpp).
///
/// The driver feeds the pure scheduler core (runtime/core) with events and carries out its
/// actions; the handlers of the parent's and the children's messages live in
/// NodeDriverParent.cpp and NodeDriverChildren.cpp.
///
/// It is driven like the core: every entry point takes the time (`now`, seconds on the
/// adapter's clock: steady_clock in the ZeroMQ adapter, simulated time in SimGrid), and
/// next_deadline() says when to call on_timer(). Its outputs go through a Transport and
/// a LocalRunner (runtime/node/Transport.hpp, LocalRunner.hpp), its log lines through the
/// sink the adapter gives (NodeOptions::log). It never blocks: a speed measurement it
/// needs is the adapter's to make (LocalRunner::measure_speed, on_speed_measured).

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
#include "runtime/node/Blame.hpp"
#include "runtime/node/CalibrationRuns.hpp"
#include "runtime/node/Children.hpp"
#include "runtime/node/Estimates.hpp"
#include "runtime/node/ExitCode.hpp"
#include "runtime/node/Lifecycle.hpp"
#include "runtime/node/LocalRunner.hpp"
#include "runtime/node/LocalWork.hpp"
#include "runtime/node/Log.hpp"
#include "runtime/node/ParentLink.hpp"
#include "runtime/node/Payload.hpp"
#include "runtime/node/RootRole.hpp"
#include "runtime/node/RunConfig.hpp"
#include "runtime/node/SendLedger.hpp"
#include "runtime/node/TaskMap.hpp"
#include "runtime/node/Timers.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::node {

/// How a node behaves; time values in seconds.
struct NodeOptions {
  std::string name;                 ///< Unique node name.
  std::uint64_t memory = 0;         ///< bytes advertised in Hello (0: not accounted).
  /// This node's other resources for applications' requirements (papers/lee2010 slide
  /// 19, docs/migration.md "Requirements"; 0 = unknown, taken as sufficient).
  std::uint64_t disk = 0;           ///< bytes of free disk
  double speed = 0;                 ///< flop/s per core
  /// seconds between this node's online estimates to its parent where there are no
  /// heartbeats (heartbeat_interval 0: the simulator sets 1 s); with heartbeats they ride
  /// on them (docs/live-model.md). 0: none.
  double estimate_interval = 0;
  /// This process's CPU seconds so far (user + system, every thread), sent up with the
  /// estimates on each heartbeat (docs/live-model.md, "The a-posteriori prediction");
  /// unset: not reported (a simulation, several nodes in one process).
  std::function<double()> process_cpu_seconds = {};
  /// The estimates' shift test (RunningEstimate.hpp, docs/live-model.md).
  ShiftTestParams shift_test = {};
  /// Where the driver's log lines go (the adapters forward them to spdlog); unset: nowhere.
  LogSink log = {};
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
  /// (`treefarm status`); the ZeroMQ adapter reads sysinfo(2). Unset: unknown.
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

/// Why a child is dropped: it decides whether the child is told and how loudly it is logged.
enum class DropKind {
  goodbye,     ///< it said Bye
  gone,        ///< its connection is gone, it went silent, or it joined again: not told (while closing, neither is a warning)
  misbehaved,  ///< it broke the protocol or forged: told (it may still be alive)
};

class NodeDriver {
 public:
  /// A worker (no root setup) or the root. `runner` may be null (a node that only
  /// forwards). Throws std::invalid_argument for bad options.
  NodeDriver(NodeOptions options, Transport& transport, LocalRunner* runner, std::optional<RootSetup> root);
  /// A served root between runs (docs/serve.md): finished, it keeps the Hellos of
  /// would-be children (`waiting` and those that come), telling each to wait, until the
  /// adapter hands them to the next run's driver (take_waiting).
  NodeDriver(NodeOptions options, Transport& transport, std::vector<WaitingHello> waiting);
  ~NodeDriver();
  NodeDriver(const NodeDriver&) = delete;
  NodeDriver& operator=(const NodeDriver&) = delete;

  /// Starts the node: the root configures itself (and may start dispatching), a worker
  /// sends Hello to its parent.
  void start(double now);
  /// Hellos kept by an earlier driver on the same connections (a served tree's next run):
  /// each is handled as if it arrived now.
  void adopt(std::vector<WaitingHello> waiting, double now);

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
  const std::vector<net::msg::Ancestor>& ancestors() const { return parent_.ancestors(); }
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
  /// The speed the driver asked for (LocalRunner::measure_speed), flop/s per core: the
  /// Welcome it waited for is applied now.
  void on_speed_measured(double flops_per_core, double now);
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

  bool finished() const { return life_.is(Phase::done); }
  /// The run ends (or ended) with a reset (docs/serve.md): the adapter keeps the connections
  /// and, once finished(), starts a new driver on them (handing it take_waiting()).
  bool reset_requested() const { return reset_; }
  /// Closing for a reset: a Hello arriving now belongs to the next run (this driver keeps it).
  bool closing_for_reset() const { return reset_ && life_.is(Phase::closing); }
  /// Finished with a reset: Hellos are still taken in and kept for the next run.
  bool keeps_hellos() const { return reset_ && (life_.is(Phase::closing) || life_.is(Phase::done)); }
  /// The Hellos of would-be children waiting for this node to run (or for the next run).
  const std::vector<WaitingHello>& waiting() const { return children_.waiting(); }
  std::vector<WaitingHello> take_waiting() { return children_.take_waiting(); }
  int exit_code() const { return exit_code_; }
  /// The scheduler's policy once the node has joined (else null).
  const core::Policy* policy() const;
  const std::string& name() const { return opt_.name; }
  /// Children currently joined.
  std::size_t child_count() const { return children_.size(); }
  /// Sets NodeOptions::endpoint (the adapter knows it once it has bound its socket).
  void set_endpoint(std::string endpoint) { opt_.endpoint = std::move(endpoint); }
  /// What this node tells a msg::TreeQuery: itself, its applications with its task times
  /// (calibrated, else the mean of the tasks it ran, else 0), its children with their
  /// endpoints and known link bandwidths.
  net::msg::TreeInfo tree_info() const;
  /// Root: tasks recorded done so far.
  std::uint64_t completed() const;

 private:
  bool is_root() const { return root_ != nullptr; }
  // The pump (NodeDriver.cpp).
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
  Payload take_output(core::TaskId id);
  /// A measurement (calibration, fallbacks) goes up: to the parent, or the root's hook.
  void report(const net::msg::Measure& measure);
  // Ending (NodeDriver.cpp).
  void begin_closing(const std::string& reason, double now);
  void maybe_closed(double now);
  void end(int code);
  // The parent (NodeDriverParent.cpp).
  void parent_says(net::Message& message, Payload& payload, double now);
  void welcomed(const net::msg::Welcome& w, double now);
  /// `voluntary`: a re-parenting move (move_to), logged as info, not as an error.
  void parent_lost(const std::string& why, double now, bool voluntary = false);
  void rejoin_due(double now);
  net::msg::Hello hello() const;
  net::msg::Welcome welcome_for_children() const;
  // The children (NodeDriverChildren.cpp).
  void admit(PeerId peer, const net::msg::Hello& hello, double now);
  void handle_child(Child& child, PeerId peer, net::Message& message, Payload& payload, double now);
  void child_result(Child& child, PeerId peer, net::msg::Result& result, Payload& payload, double now);
  void drop_child(PeerId peer, DropKind kind, const std::string& why, double now);
  void node_joined(const net::msg::NodeJoined& joined, double now);
  void heartbeats(double now);
  void check_acknowledgements(double now);
  /// This node's state now (cores, busy cores, tasks held and not running, machine load).
  net::msg::NodeLoad own_load() const;
  // Blame below an inner node (NodeDriverBlame.cpp).
  void blame_forgery(Child& child, PeerId peer, const net::msg::Result& forged, double now);
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
  // Online estimates and re-plans (docs/live-model.md; NodeDriverEstimates.cpp).
  void configure_estimates(const std::vector<double>& prior_seconds);
  void task_estimate(std::size_t app, double seconds);
  /// Where there are no heartbeats: this node's estimates up, every estimate interval.
  void send_estimates(double now);
  /// Root: the tree's estimates to RootSetup::on_estimates; a new plan it returns is
  /// followed from now on.
  void root_estimates(std::vector<net::msg::Estimate> estimates, double now);

  NodeOptions opt_;
  Logger log_;
  Transport& transport_;
  Lifecycle life_;
  Timers timers_;
  LocalWork work_;
  std::unique_ptr<RootRole> root_;  ///< the root's part; null on a worker
  RunConfig run_;
  std::unique_ptr<core::NodeScheduler> sched_;
  ParentLink parent_;
  Children children_;
  SendLedger ledger_;
  Blame blame_;
  CalibrationRuns calib_;
  Estimates estimates_;

  // The pump: events for the core, and its actions' vector kept from one event to the next.
  core::FifoQueue<core::Event> events_;  ///< keeps its memory: no allocation per event
  std::vector<core::Action> spare_actions_;
  bool draining_ = false;
  bool retried_ = false;  ///< a failed task of the actions being carried out is done again (max_retries)

  // Tasks held here and results on their way up (payloads shared, never copied).
  TaskMap<Payload> payloads_;
  TaskMap<net::msg::Result> results_;
  TaskMap<Payload> outputs_;  ///< command outputs going up with results_

  // Measuring (Phase::measuring): the Welcome waiting for this node's speed, and what the
  // parent sent meanwhile.
  std::optional<net::msg::Welcome> pending_welcome_;
  std::vector<std::pair<net::Message, Payload>> held_from_parent_;

  bool reset_ = false;  ///< this run ends with a reset (served tree)
  int closing_code_ = exit_ok;
  bool waits_for_children_ = true;  ///< false once interrupted: the children are told, not waited for
  int exit_code_ = exit_ok;
};

}  // namespace treefarm::node
