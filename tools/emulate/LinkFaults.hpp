#pragma once
/// @file LinkFaults.hpp
/// Network faults on an emulated platform's links (docs/emulation.md, "Network faults"),
/// made inside the namespaces the platform owns, so that deleting a namespace removes
/// them too (teardown, `treefarm emulate --cleanup`):
/// - loss P: an nftables table `treefarm_fault_ID` in the child's namespace drops each
///   packet in and out of its veth with probability P (`numgen random mod 1000000 < P·10⁶`);
/// - partition: the same table drops every packet of that veth: the link stays up, the
///   child and its whole subtree (a tree: that link is their only way out) are cut off;
/// - down: `ip link set DEV down` on the child's end (the parent's end loses its carrier).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/Fault.hpp"
#include "tools/emulate/Platform.hpp"

namespace treefarm::emulate {

/// Name of the nftables table of fault `id`: "treefarm_fault_ID".
std::string fault_table(std::size_t id);

/// Starts fault `fault` (numbered `id`, unique among the run's faults) on the link between
/// node `node` and its parent. Throws PlatformError with the failing command.
void apply_fault(const Platform& platform, std::size_t node, const model::FaultSpec& fault, std::size_t id);
/// Ends it: the table deleted or the link set up again. Throws PlatformError.
void revert_fault(const Platform& platform, std::size_t node, const model::FaultSpec& fault, std::size_t id);

/// The nftables tables named treefarm_fault_* in node i's namespace (for checks).
std::vector<std::string> fault_tables_of(const Platform& platform, std::size_t node);
/// Packets fault `id` (loss or partition) has dropped so far on node i's link (its rules'
/// counters; 0 if the table is gone).
std::uint64_t fault_drops(const Platform& platform, std::size_t node, std::size_t id);
/// True if node i's veth to its parent is up (administratively).
bool link_is_up(const Platform& platform, std::size_t node);

}  // namespace treefarm::emulate
