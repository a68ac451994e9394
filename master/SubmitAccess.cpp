#include "master/SubmitAccess.hpp"

#include <cerrno>
#include <cstring>
#include <optional>
#include <regex>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "runtime/zmq/Wire.hpp"

namespace treefarm::master {

namespace {
/// The uid of the process at the other end of an ipc:// connection: libzmq reads it with
/// SO_PEERCRED when the connection is made and gives it in the "Peer-Address" message
/// property as "HOST:UID:GID:PID". nullopt if the property is absent or malformed.
std::optional<uid_t> ipc_peer_uid(zmq::message_t& frame) {
  const char* address = frame.gets("Peer-Address");
  if (!address) return std::nullopt;
  static const std::regex form(R"(^.*:(\d{1,10}):\d+:\d+$)");
  std::cmatch m;
  if (!std::regex_match(address, m, form)) return std::nullopt;
  return static_cast<uid_t>(std::stoul(m[1].str()));
}
}  // namespace

SubmitAccess::SubmitAccess(zmq::context_t& context, zmq::socket_t& socket, const ServeOptions& options)
    : options_(options) {
  const auto& curve = options.base.curve;
  if (curve.enabled) {
    zap_ = std::make_unique<net::ZapHandler>(
        context, curve, options.name + "-submit",
        net::ZapPolicy{{net::KeyRole::client, net::KeyRole::admin}, curve.own.public_key, "the submit channel"});
    net::apply_curve_server(socket, curve);
  } else if (!net::is_loopback_endpoint(options.bind) && !options.base.insecure) {
    throw std::invalid_argument("refusing an unencrypted submit channel on a non-loopback address (--bind " +
                                options.bind + "): give CURVE keys or --insecure");
  }
}

SubmitAccess::~SubmitAccess() = default;

void SubmitAccess::bound(const std::string& endpoint) {
  endpoint_ = endpoint;
  // The socket file of an ipc:// channel (not an abstract one, "ipc://@NAME", which has no
  // file: the uid check in peer() is what holds there).
  if (endpoint.starts_with("ipc://") && !endpoint.starts_with("ipc://@") &&
      ::chmod(endpoint.substr(6).c_str(), 0600) != 0)
    throw std::runtime_error("cannot make " + endpoint.substr(6) + " mode 0600: " + std::strerror(errno));
}

Peer SubmitAccess::peer(const std::string& client, zmq::message_t& head) const {
  Peer p;
  if (zap_) {
    const char* key = head.gets("User-Id");
    const auto role = key ? zap_->role_of(key) : std::nullopt;
    if (!role || *role == net::KeyRole::node)
      throw std::invalid_argument("this key may no longer use the submit channel (a client or admin key may)");
    p.owner = "key " + zap_->name_bound_to(key).value_or(key);
    p.trusted = true;
    p.admin = *role == net::KeyRole::admin;
    return p;
  }
  if (endpoint_.starts_with("ipc://")) {
    const auto uid = ipc_peer_uid(head);
    if (!uid || (*uid != ::geteuid() && *uid != 0)) {
      spdlog::warn("{}: refused a request on {} from uid {}: not the master's user or root", options_.name, endpoint_,
                   uid ? std::to_string(*uid) : std::string("(unknown)"));
      throw std::invalid_argument("this ipc:// channel serves the master's own user and root only");
    }
    p.owner = "uid " + std::to_string(*uid);
    p.trusted = true;
    p.admin = *uid == 0;
    return p;
  }
  std::string hex;
  for (unsigned char c : client) {
    hex += "0123456789abcdef"[c >> 4];
    hex += "0123456789abcdef"[c & 15];
  }
  p.owner = "connection " + hex;  // TCP without CURVE: nobody is authenticated
  return p;
}

void SubmitAccess::check_commands(const model::Experiment& experiment, const Peer& from, const std::string& file) const {
  for (std::size_t i = 0; i < experiment.apps.size(); ++i) {
    const auto& app = experiment.apps[i];
    if (app.kernel != model::Kernel::command) continue;
    const std::string what = "application '" + app.name + "' is a command: ";
    if (!options_.allow_commands)
      throw model::FileError(file, app.line, "app[" + std::to_string(i) + "]",
                             what + "this served master runs no submitted programs (it was started without "
                                    "--allow-commands; docs/security.md)");
    if (!from.trusted)
      throw model::FileError(file, app.line, "app[" + std::to_string(i) + "]",
                             what + "command applications are accepted only over CURVE from a client key, or over an "
                                    "ipc:// channel from the master's own user (this channel is TCP without CURVE; "
                                    "docs/security.md)");
  }
}

void SubmitAccess::check_cancel(const Peer& from, const std::string& owner, std::uint64_t id) const {
  if (owner == from.owner || from.admin) return;
  spdlog::warn("{}: refused to cancel experiment {} (submitted by {}) for {}", options_.name, id, owner, from.owner);
  throw std::invalid_argument("experiment " + std::to_string(id) +
                              " was submitted by someone else: only its submitter or an admin key may cancel it");
}

}  // namespace treefarm::master
