#include "runtime/plan/PlanTree.hpp"

#include <stdexcept>

namespace treefarm::plan {

std::size_t PlanTree::root() const {
  std::size_t found = parent.size();
  for (std::size_t i = 0; i < parent.size(); ++i)
    if (parent[i] == root_mark) {
      if (found != parent.size()) throw std::logic_error("plan tree: two roots");
      found = i;
    }
  if (found == parent.size()) throw std::logic_error("plan tree: no root");
  return found;
}

std::size_t PlanTree::size() const {
  std::size_t n = 0;
  for (int p : parent) n += p != unused_mark ? 1 : 0;
  return n;
}

bool PlanTree::in_subtree(std::size_t node, std::size_t ancestor) const {
  std::size_t steps = 0;
  for (int u = static_cast<int>(node); u >= 0 && steps <= parent.size(); u = parent[static_cast<std::size_t>(u)], ++steps)
    if (static_cast<std::size_t>(u) == ancestor) return true;
  return false;
}

std::vector<std::vector<std::size_t>> PlanTree::children() const {
  std::vector<std::vector<std::size_t>> out(parent.size());
  for (std::size_t i = 0; i < parent.size(); ++i)
    if (parent[i] >= 0) out[static_cast<std::size_t>(parent[i])].push_back(i);
  return out;
}

std::vector<std::size_t> PlanTree::breadth_first() const {
  const auto kids = children();
  std::vector<std::size_t> order{root()};
  for (std::size_t head = 0; head < order.size(); ++head)
    for (std::size_t c : kids[order[head]]) order.push_back(c);
  if (order.size() != size()) throw std::logic_error("plan tree: a used machine does not reach the root (cycle)");
  return order;
}

PlanTree PlanTree::star(std::size_t machines, std::size_t root) {
  PlanTree t;
  t.parent.assign(machines, static_cast<int>(root));
  t.parent[root] = root_mark;
  return t;
}

bool is_valid(const PlanTree& tree) {
  try {
    for (int p : tree.parent)
      if (p >= static_cast<int>(tree.parent.size()) || p < PlanTree::unused_mark) return false;
    for (std::size_t i = 0; i < tree.parent.size(); ++i)
      if (tree.parent[i] >= 0 && !tree.used(static_cast<std::size_t>(tree.parent[i]))) return false;
    (void)tree.breadth_first();
    return true;
  } catch (const std::logic_error&) {
    return false;
  }
}

}  // namespace treefarm::plan
