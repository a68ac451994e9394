#pragma once
/// @file ParentLink.hpp
/// A node's side of the link to its parent (docs/fault-tolerance.md): who the parent is,
/// the ancestors the last Welcome announced (tree repair), the rejoin schedule after a loss
/// (rounds over the parent and its ancestors, nearest first, spaced by a back-off of
/// 0.5, 1, 2, 4, 8, 8, ... s) and the acknowledgements of received tasks waiting for the
/// next flush. Pure: times are passed in (seconds on the adapter's clock).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/net/Messages.hpp"
#include "runtime/node/Log.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::node {

class ParentLink {
 public:
  /// Before the first Hello: the parent as the options give it (its name is not known yet).
  void start(std::string endpoint, std::string public_key);

  /// The Welcome of `w` was accepted by node `own_name`: the parent's name, and the
  /// ancestors (the parent first, then its own, without `own_name`, at most max_ancestors).
  void welcomed(const net::msg::Welcome& w, const std::string& own_name, const Logger& log);
  /// Running again: the rejoin schedule starts afresh at the next loss.
  void joined();

  /// The parent is lost at `now` (or a rejoin attempt failed). Nullopt: more than
  /// `rejoin_timeout` seconds since the loss — give up. Else the seconds to wait before
  /// the next attempt, whose target() is chosen.
  std::optional<double> lost(double now, double rejoin_timeout);
  /// More than `rejoin_timeout` seconds since the loss.
  bool expired(double now, double rejoin_timeout) const { return lost_at_ && now - *lost_at_ > rejoin_timeout; }
  /// Rejoining (lost, not yet welcomed again).
  bool rejoining() const { return lost_at_.has_value(); }
  /// The node the next attempt goes to.
  const net::msg::Ancestor& target() const { return targets_.at(next_); }
  /// The next attempt starts: the parent is its target from now on.
  void attempt();
  /// Re-parenting (NodeDriver::move_to): after lost(), the next attempts go to `target`
  /// first, then to the old ancestors.
  void move_to(const net::msg::Ancestor& target, const std::vector<net::msg::Ancestor>& old_ancestors);

  const net::msg::Ancestor& parent() const { return link_; }
  const std::vector<net::msg::Ancestor>& ancestors() const { return ancestors_; }

  /// Joining: the parent serves a tree with no run now (docs/serve.md); wait for it.
  bool idle = false;
  /// Closing because the parent said Shutdown: its connection closing is expected.
  bool closed_by_parent = false;

  /// A task received: acknowledged at the next flush (msg::Received).
  void acknowledge(std::uint64_t task_id) { acks_.push_back(task_id); }
  /// Sends the waiting acknowledgements (at most max_received_ids per message).
  void flush(Transport& transport);
  void forget_acks() { acks_.clear(); }

 private:
  net::msg::Ancestor link_;
  std::vector<net::msg::Ancestor> ancestors_;
  std::vector<net::msg::Ancestor> targets_;  ///< this round of rejoin attempts
  std::size_t next_ = 0;                     ///< the one tried now
  std::optional<double> lost_at_;
  double backoff_ = 0.5;                     ///< seconds before the next round
  std::vector<std::uint64_t> acks_;
};

}  // namespace treefarm::node
