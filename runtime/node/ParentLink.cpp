#include "runtime/node/ParentLink.hpp"

#include <algorithm>

namespace treefarm::node {

void ParentLink::start(std::string endpoint, std::string public_key) {
  link_ = net::msg::Ancestor{"", std::move(endpoint), std::move(public_key)};
}

void ParentLink::welcomed(const net::msg::Welcome& w, const std::string& own_name, const Logger& log) {
  // Tree repair: this node's ancestors are its parent and the parent's own.
  if (!w.sender.empty()) {
    if (!link_.name.empty() && link_.name != w.sender)
      log.warn("{}: expected '{}' at {}, joined '{}'", own_name, link_.name, link_.endpoint, w.sender);
    link_.name = w.sender;
  }
  ancestors_.clear();
  const auto fits = [](const net::msg::Ancestor& a) {
    return !a.name.empty() && !a.endpoint.empty() && a.name.size() <= net::max_name_bytes &&
           a.endpoint.size() <= net::max_name_bytes && (a.public_key.empty() || a.public_key.size() == 40);
  };
  net::msg::Ancestor parent = link_;
  if (parent.name.empty()) parent.name = parent.endpoint;  // a parent that does not say its name
  if (fits(parent)) ancestors_.push_back(parent);
  for (const auto& a : w.ancestors)
    if (a.name != own_name && fits(a) && ancestors_.size() < net::max_ancestors) ancestors_.push_back(a);
}

void ParentLink::joined() {
  lost_at_.reset();
  backoff_ = 0.5;
  targets_.clear();
  next_ = 0;
}

std::optional<double> ParentLink::lost(double now, double rejoin_timeout) {
  const bool first_failure = !lost_at_;
  if (first_failure) lost_at_ = now;
  if (now - *lost_at_ > rejoin_timeout) return std::nullopt;
  double delay = 0.1;  // the next ancestor of this round: at once (the socket needs a moment)
  if (first_failure || targets_.empty()) {
    targets_ = ancestors_;
    if (targets_.empty()) targets_.push_back(link_);
    next_ = 0;
  } else if (++next_ >= targets_.size()) {
    next_ = 0;
  }
  if (first_failure || next_ == 0) {  // a new round
    delay = backoff_;
    backoff_ = std::min(backoff_ * 2, 8.0);
  }
  return delay;
}

void ParentLink::attempt() {
  link_ = target();
  if (link_.name == link_.endpoint) link_.name.clear();  // a parent that never said its name
}

void ParentLink::move_to(const net::msg::Ancestor& target, const std::vector<net::msg::Ancestor>& old_ancestors) {
  targets_.assign(1, target);  // the new parent first, then the old tree's nodes
  for (const auto& a : old_ancestors)
    if (a.endpoint != target.endpoint) targets_.push_back(a);
  next_ = 0;
}

void ParentLink::flush(Transport& transport) {
  for (std::size_t i = 0; i < acks_.size(); i += net::max_received_ids) {
    const auto end = std::min(acks_.size(), i + net::max_received_ids);
    transport.send_parent(net::msg::Received{std::vector<std::uint64_t>(acks_.begin() + static_cast<std::ptrdiff_t>(i),
                                                                         acks_.begin() + static_cast<std::ptrdiff_t>(end))});
  }
  acks_.clear();
}

}  // namespace treefarm::node
