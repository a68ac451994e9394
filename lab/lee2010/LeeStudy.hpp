#pragma once
/// @file LeeStudy.hpp
/// The simulated experiment of papers/lee2010 (slides 19–24): a job-level discrete-event
/// simulation of a desktop grid whose nodes (1/2/4/8 cores, a CPU speed, memory, disk)
/// receive jobs with Poisson arrivals and multi-resource requirements, scheduled by
/// Vanilla, L, LI-PUSH/PULL, LIQ-PUSH/PULL or a centralized scheduler (CENT).
///
/// What it shares with the runtime: every node's waiting queue *is* an exec::Backfill
/// (runtime/exec/Backfill: the Backfilling Counter of slide 13, Backfill Balanced BM × FM
/// of slide 14, strict FIFO for Vanilla), and a migrated job keeps its BC (slide 15's
/// Node Backfilling Counter rule compares it with the target queue's max BC). The
/// inter-node schemes (PUSH/PULL target choice, queue balancing TLL/MLL) are written
/// here, on a graph of neighbours, because the tree runtime's bag of identical tasks has
/// no arrivals and no per-task requirements (docs/results/migration.md says so).
///
/// Not the paper's simulator: the CAN overlay is a random graph of about `neighbours`
/// neighbours per node, and the initial placement (the paper's CAN matchmaking) is a
/// uniformly random node that satisfies the job's constraints.

#include <cstdint>
#include <string>
#include <vector>

namespace treefarm::lab::lee2010 {

/// The schemes of slide 20.
enum class LeeScheme {
  vanilla,   ///< no dynamic scheduling: FIFO queues, jobs stay where placed
  l,         ///< intra-node backfilling (BC, Backfill Balanced)
  li_push,   ///< L + inter-node, sender-initiated (slide 16)
  li_pull,   ///< L + inter-node, receiver-initiated (slide 16)
  liq_push,  ///< LI-PUSH + queue balancing (slide 17)
  liq_pull,  ///< LI-PULL + queue balancing (slide 17)
  cent,      ///< one global queue, global knowledge (slide 20)
};

/// "vanilla", "L", "LI-PUSH", …, "CENT".
const char* to_string(LeeScheme scheme);
/// All seven, in the order above.
std::vector<LeeScheme> all_lee_schemes();

/// Queue balancing objective (slide 17).
enum class LeeBalance {
  tll,  ///< minimise the total local load (sum over the two nodes a move touches)
  mll,  ///< minimise the maximum local load of the two
};

struct LeeStudyOptions {
  std::uint32_t nodes = 1000;         ///< nodes of the grid
  std::uint32_t jobs = 5000;          ///< job submissions
  double load = 0.9;                  ///< offered load: λ · E[run time] · E[cores of a job] / total cores
  double constraint_ratio = 0.5;      ///< probability that each resource of a job is specified (slide 19)
  double period = 60.0;               ///< seconds between two rounds of dynamic scheduling (slide 12)
  std::uint32_t neighbours = 8;       ///< mean neighbours per node
  LeeBalance balance = LeeBalance::tll;
  std::uint64_t seed = 1;
};

struct LeeResult {
  LeeScheme scheme = LeeScheme::vanilla;
  double mean_wait = 0;          ///< seconds from arrival to start, averaged over the jobs
  double p95_wait = 0;           ///< seconds, 95th percentile
  double makespan = 0;           ///< seconds until the last job ends
  double mean_interarrival = 0;  ///< τ, seconds
  std::uint64_t messages = 0;    ///< migration messages: PULL requests, rejects, job transfers
  std::uint64_t migrations = 0;  ///< jobs moved between nodes
  std::uint64_t unplaceable = 0; ///< jobs no node can run (dropped, not counted in the waits)
};

/// Runs one simulation. Deterministic for a given options.seed (same grid and jobs for
/// every scheme). Throws std::logic_error if an internal check fails (a job started
/// twice, on a node that cannot run it, or over a node's cores or memory).
LeeResult run_lee_study(const LeeStudyOptions& options, LeeScheme scheme);

}  // namespace treefarm::lab::lee2010
