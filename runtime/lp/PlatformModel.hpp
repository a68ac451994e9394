#pragma once
/// @file PlatformModel.hpp
/// The platform and applications as the steady-state LP sees them (papers/beaumont2006
/// §2): a rooted tree of nodes with cores, per-application task durations and link
/// bandwidths, and K bag-of-tasks applications with task size b(k) and weight w(k).
/// Built from an experiment (and, when available, calibration measures) by
/// model_from_experiment(), or directly (tests, `treefarm bench lp`).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"

namespace treefarm::lp {

/// Platform tree and applications, in the units of the LP: bytes, seconds, bytes/s.
struct PlatformModel {
  struct Node {
    std::string name;
    int parent = -1;           ///< Index of the parent node; -1 for the root (node 0).
    std::uint32_t cores = 0;   ///< Cores that compute; 0 = the node only forwards.
    /// bytes/s of the link from the parent; +inf for the root and for loopback links.
    double link_bandwidth = 0.0;
    /// Per application: seconds one task takes while holding cores_per_task cores of
    /// this node. +inf or 0 means the node cannot run that application.
    std::vector<double> task_seconds;
    /// bytes/s bound on the node's total outgoing rate (bounded multi-port,
    /// papers/bertin2008 §2.1); +inf = no bound. Ignored in the one-port model.
    double max_out_bandwidth = 0.0;
    /// Index in `hosts` of the machine the node runs on; -1 = a machine of its own,
    /// shared with no other node (no host row).
    int host = -1;
    /// Fraction of its CPUs' time the node had while its task_seconds were measured (in
    /// (0, 1]; 1 = it had them alone). A task of k costs task_seconds·cpu_share·
    /// cores_per_task CPU-seconds of its host (docs/lp.md, "Hosts").
    double cpu_share = 1.0;
    /// CPUs the node's executor is pinned to (empty = unknown): nodes of one host with
    /// the same set share those CPUs (one LP row per set).
    std::vector<int> cpus{};
    /// Seconds a buffer slot of this node waits for a task beyond the task's transfer:
    /// its request travels up, the task's first byte comes down (2·latency on a declared
    /// link; the measured 1-byte round trip on a calibrated one). With the buffer B, the
    /// tasks in flight to the node obey Little's law (docs/lp.md, "Latency"):
    ///   Σ_k sent^(k)·(request_round_trip + b(k)/link_bandwidth) <= B.   0 = no bound.
    double request_round_trip = 0.0;
    /// Per application: true when the node's buffer cannot hold the tasks its link brings
    /// between two of this application's tasks, so the next one is requested only once
    /// the current one has started and its transfer (request_round_trip + b(k)/b_v) is not
    /// overlapped with computation: the node's time row charges it (docs/lp.md "The
    /// buffer against the round trip"). lp::solve sets it from its own solution; empty
    /// (all false) in a model as built.
    std::vector<char> serial_transfer{};
    /// Seconds the parent's one-port stays busy per task beyond b(k)/link_bandwidth: the
    /// simulator's transfer ends after latency + bytes/bandwidth (so the link latency);
    /// the ZeroMQ adapter frees the port on the child's Received acknowledgement (so the
    /// measured round trip). Used by the one-port row only.
    double port_hold = 0.0;
  };
  /// A machine several nodes share (on `treefarm run`, every node is on this machine).
  struct Host {
    std::string name;
    /// CPUs of the machine its nodes use: their tasks and their transfers (> 0).
    double cores = 0.0;
    /// CPU seconds one byte costs to move from one node to another of this host (send
    /// and receive together, over the transport in use), measured; a transfer to or from
    /// another host costs half of it here. 0 = not measured (free).
    double comm_cpu_seconds_per_byte = 0.0;
    /// CPU seconds per byte of input of each task whose origin is on this host: its
    /// generation (model::HostCalibration). 0 = free (pooled inputs, or not measured).
    double input_cpu_seconds_per_byte = 0.0;
    /// CPU seconds per byte of input of each task computed on this host, beyond the move:
    /// its reception and release (model::HostCalibration). 0 = free.
    double receive_cpu_seconds_per_byte = 0.0;
    /// Per application (index of `apps`): CPU seconds a task costs this host as a whole
    /// when computed by one of its nodes one hop from an origin on it, measured through
    /// the runtime (model::HostCalibration::task_cpu_seconds); it replaces the kernel,
    /// ι and ρ terms for such a task (docs/lp.md, "Hosts"). Empty or 0: not measured.
    std::vector<double> task_cpu_seconds = {};
    /// Share of the CPU it could have had that a tree at its limit on this host used
    /// (model::HostCalibration::busy_share, in (0, 1]; 1: not measured). Not a row of
    /// the LP: task_cpu_seconds already hold the idle CPU a saturated tree leaves; the
    /// a-posteriori model, whose costs are the tree's CPU only, scales the host's
    /// available CPUs by it (observed_host_model).
    double busy_share = 1.0;
    /// The tree on this host reads its task inputs in place from shared memory
    /// (model::HostCalibration::shared_inputs): a hop from an application's origin, which
    /// makes each input straight into the child's slot, moves only the task's output at γ
    /// (hop_bytes).
    bool shared_inputs = false;
  };
  struct App {
    std::string name;
    double bytes = 0.0;              ///< b(k): bytes sent down the tree per task.
    double weight = 1.0;             ///< w(k) > 0, priority weight.
    std::uint32_t cores_per_task = 1;///< Cores a task holds while it runs (>= 1).
    /// Index of the node hosting the application's master, P_{m(k)} of papers/bertin2008
    /// §2.2 (0: the root). Its tasks follow the tree re-rooted there: for k, a node's
    /// upstream neighbour is the one towards `origin` (see upstream()).
    std::size_t origin = 0;
    /// bytes each task's output sends back the other way, towards the origin (a command
    /// with `output_file`, calibrated); 0 = negligible (a result's checksum),
    /// the paper's assumption (beaumont2006 §2).
    double result_bytes = 0.0;
  };
  std::vector<Node> nodes;  ///< Every parent before its children; node 0 is the root.
  std::vector<App> apps;
  std::vector<Host> hosts;  ///< Machines nodes share (empty: every node alone).
  model::CommModel comm_model = model::CommModel::one_port;
  /// B: tasks a node holds or has requested (`[run] buffer`); 0 = unbounded (no
  /// latency row in the LP).
  std::uint32_t buffer = 0;
  /// bytes: the one-port window of the real transport (model::default_one_port_window on a
  /// calibrated platform, 0 in simulation, where a send holds the port for its latency).
  std::uint64_t one_port_window = 0;

  /// Seconds node u's parent's one-port stays busy per task of application k beyond its
  /// bytes: port_hold, or, for a task that frees the port at once (at most
  /// model::one_port_release_limit(one_port_window) bytes), port_hold shared by the
  /// floor(window / b(k)) tasks that are in flight during one acknowledgement round trip.
  double port_hold_per_task(std::size_t u, std::size_t k) const;

  /// True if node u can run application k (cores >= cores_per_task, finite positive
  /// task duration).
  bool can_run(std::size_t u, std::size_t k) const;
  /// True if application k's origin is node u or below it: then k crosses the link between
  /// u and its parent upwards (towards the parent), else downwards (bertin2008 §2.2).
  bool flows_up(std::size_t u, std::size_t k) const;
  /// The neighbour node u receives k's tasks from (its parent in k's spanning tree, the
  /// tree re-rooted at apps[k].origin): its parent, or the child towards the origin; -1
  /// at the origin itself.
  int upstream(std::size_t u, std::size_t k) const;
};

/// Bytes a hop from the origin of `app` moves per task at `host`'s γ (docs/lp.md, "Hosts"):
/// the task's input and its output; on a host of shared inputs (Host::shared_inputs) only
/// the output.
double origin_hop_bytes(const PlatformModel::Host& host, const PlatformModel::App& app);

/// The same for the hop between the adjacent nodes `a` and `b` (either way) for application
/// `k`: origin_hop_bytes when one of them is its origin, else the input and the output.
double hop_bytes(const PlatformModel& m, const PlatformModel::Host& host, std::size_t a, std::size_t b, std::size_t k);

/// Per node name, per application name: calibrated seconds of one task (holding
/// cores_per_task cores) on that node.
using MeasuredSeconds = std::map<std::string, std::map<std::string, double>>;
/// Per node name: calibrated bytes/s of the link from its parent.
using MeasuredBandwidth = std::map<std::string, double>;

/// Builds the LP's view of an experiment.
///
/// - Task duration of application k on node u: the measured value when
///   `measured_seconds` has one for (u, k); otherwise flops(k) / (cores_per_task(k) ·
///   speed_u), a task spreading its flop over its cores_per_task cores at speed_u flop/s
///   per core. A node with fewer cores than cores_per_task(k) cannot run k; a node with
///   cores = 0 only forwards. A kernel with no flop (noop) needs a measured duration.
/// - Link bandwidth of node u: the measured value when `measured_bandwidth` has one,
///   otherwise node.bandwidth; a node with neither gets +inf (a loopback link: transfers
///   take no time in the model). The root has no link (+inf).
/// - max_out_bandwidth of every node: run.max_out_bandwidth when set, else +inf.
/// - Latency: request_round_trip = 2·latency and port_hold = latency of the
///   link from the parent (the simulator's behaviour), buffer = run.buffer.
///
/// Throws std::invalid_argument naming the node (or application) and the field for a
/// zero, negative or NaN bandwidth, speed, measured duration, weight or max_out_bandwidth;
/// for a parent that is
/// unknown or comes after its child; and for an application that no node can run.
/// Throws model::FileError (file, the node's line, "node[i].speed") for a computing node
/// with neither speed nor measured duration.
PlatformModel model_from_experiment(const model::Experiment& experiment,
                                    const MeasuredSeconds* measured_seconds = nullptr,
                                    const MeasuredBandwidth* measured_bandwidth = nullptr);

/// The model of a calibrated platform: task durations and link bandwidths from the
/// calibration (a link recorded without bandwidth, faster than the probe resolves, is
/// unconstrained), each node's cores as the node advertised them when it joined
/// (calibration `cores` > 0), else the experiment's, and its measured aggregate output
/// (`out_bandwidth`) as its max_out_bandwidth (used by the multi-port model), and the
/// calibration's hosts: which nodes share a machine, their CPU shares and pinned CPUs,
/// the machine's cores and its measured CPU cost per byte moved; for an application that
/// sends its outputs back (`output_file`), result_bytes = the mean of the output sizes
/// its nodes measured; a measured link round
/// trip (`link_round_trip`) sets request_round_trip and port_hold (the ZeroMQ adapter's
/// one-port waits for the child's acknowledgement).
///
/// Links within one host (a node and its parent on the same calibrated host): a
/// "transfer" there is a memory copy over loopback that costs the host's CPUs, which the
/// host row charges (γ_h per byte, docs/lp.md "Hosts"); a probe round is slowed by
/// whatever else those CPUs did meanwhile (rounds ~5× apart on a loaded 2-core machine),
/// which the host row also charges. By default such a link is therefore bounded by its
/// fastest round (unconstrained when none was resolved), not its median;
/// `same_host_links_bind` keeps the median (the pessimistic end of the prediction
/// interval, runtime/lp/PredictionInterval.hpp, then takes the slowest round), so the
/// probes' spread stays visible. A node's measured aggregate output (`out_bandwidth`, its
/// one sending path) applies either way.
///
/// Twins — nodes of one host computing on the same CPUs with the same cores and CPU share
/// (the quickstart's workers sharing both CPUs) — take the mean of their measured task
/// times per application: the same kernels on the same hardware, whose figures differ only
/// by the calibration's noise, on which the LP's optimum would otherwise turn.
PlatformModel model_from_calibration(model::Experiment experiment, const model::Calibration& calibration,
                                     bool same_host_links_bind = false);

/// Outputs: for every application of `experiment` that sends its outputs back
/// (`output_file`), result_bytes = the mean of the output sizes the calibration's nodes
/// measured (an output's size depends on its input, not on the node); unchanged for the
/// others and when no node measured it. model_from_calibration and the simulator's
/// platform call it.
void set_result_bytes(PlatformModel& model, const model::Experiment& experiment, const model::Calibration& calibration);

/// CPU seconds host h spends per task of application k that node u computes (docs/lp.md,
/// "Hosts"): the kernel where u is on h (or, where measured, the task's whole cost
/// through the runtime less the one move the link terms charge), the input's reception
/// there, the input's generation where k's origin is on h. The moves between nodes are
/// charged per link, apart (the LP's host row, runtime/lp/SteadyState.cpp).
double host_cpu_per_task(const PlatformModel& m, std::size_t h, std::size_t u, std::size_t k);

/// CPU seconds node u's own host spends in all per task of k that u computes:
/// host_cpu_per_task on that host, plus every move of the task and its result on its way
/// from k's origin to u that the host row charges to that host (γ_h per byte: the whole
/// move for a hop with both ends on it, half for a hop with one end on it). For a node
/// without a host, its task_seconds·cpu_share·cores_per_task. The simulator charges a
/// calibrated host's CPU pools exactly this per task, part while the task travels and part
/// when it runs (docs/simulation.md, "Calibration").
double own_host_cpu_per_task(const PlatformModel& m, std::size_t u, std::size_t k);

/// Checks the invariants documented on PlatformModel (tree order, positive bandwidths and
/// weights, cores_per_task >= 1, one task duration per application, every application
/// runnable somewhere). Throws std::invalid_argument naming the node or application and
/// the field.
void validate(const PlatformModel& model);

}  // namespace treefarm::lp
