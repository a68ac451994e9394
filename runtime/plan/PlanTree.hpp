#pragma once
/// @file PlanTree.hpp
/// A candidate tree over the machines of a MachineSet: who is the master, who is whose
/// parent, and which machines are left out.

#include <cstddef>
#include <string>
#include <vector>

namespace treefarm::plan {

/// parent[i] for machine i: the index of its parent machine, `root_mark` for the master,
/// `unused_mark` for a machine not in the tree.
struct PlanTree {
  static constexpr int root_mark = -1;
  static constexpr int unused_mark = -2;
  std::vector<int> parent;

  /// Index of the master; throws std::logic_error if there is not exactly one.
  std::size_t root() const;
  /// True if machine i is in the tree.
  bool used(std::size_t i) const { return parent[i] != unused_mark; }
  /// Machines in the tree.
  std::size_t size() const;
  /// True if `ancestor` is `node` or one of its ancestors.
  bool in_subtree(std::size_t node, std::size_t ancestor) const;
  /// The used machines, breadth-first from the root (children in index order). Throws
  /// std::logic_error if the used machines do not form one tree rooted at root().
  std::vector<std::size_t> breadth_first() const;
  /// Children of every machine (index order).
  std::vector<std::vector<std::size_t>> children() const;
  /// The star: every machine a child of `root`.
  static PlanTree star(std::size_t machines, std::size_t root);
};

/// True if `tree` has one root and every used machine reaches it through used parents.
bool is_valid(const PlanTree& tree);

}  // namespace treefarm::plan
