#pragma once
/// @file Curve.hpp
/// CURVE keys and authentication (libzmq's CURVE, with libsodium): key files, the list
/// of admitted public keys, and the ZAP handler that admits only those.
///
/// Key files (written by `treefarm keygen`, docs/security.md):
///   NAME.key         public-key = "<40 Z85 characters>"
///   NAME.key_secret  public-key = "..." and secret-key = "..." (mode 0600)
///   authorized_keys  one admitted key per line, `NAME PUBKEY [ROLE]` (the key may join
///                    only as node NAME, or submit as NAME: names bound to keys; ROLE is
///                    node, client or admin, default node: docs/security.md, "Roles") or,
///                    the older form, `PUBKEY [comment]` (a node key, any name); '#' starts
///                    a comment line

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <zmq.hpp>

namespace treefarm::net {

struct KeyPair {
  std::string public_key;   ///< Z85, 40 characters
  std::string secret_key;   ///< Z85, 40 characters — never logged
};

/// A fresh key pair. Throws std::runtime_error if libzmq has no CURVE.
KeyPair generate_keypair();
/// Writes DIR/NAME.key and DIR/NAME.key_secret, the secret file created with mode 0600
/// (never readable by others, not even for an instant). NAME must be a plain file name
/// (letters, digits, '_', '-', '.'; no '/'); DIR is created if missing. An existing file
/// is not replaced unless `overwrite`. Throws std::runtime_error naming the file.
void write_keypair(const std::string& dir, const std::string& name, const KeyPair& keys, bool overwrite = false);
/// Throws std::invalid_argument unless `name` can name key files (see write_keypair).
void check_key_name(const std::string& name);
/// Reads a NAME.key_secret file. Throws std::runtime_error naming the file.
KeyPair load_secret_key_file(const std::string& path);
/// Reads the public key of a NAME.key (or NAME.key_secret) file.
std::string load_public_key_file(const std::string& path);
/// What a key listed in authorized_keys may do (docs/security.md, "Roles"): `node` joins
/// the tree (as the node its line names); `client` submits experiments to a served master,
/// reads its status and cancels its own experiments; `admin` is a client that may cancel
/// anyone's. A tree's listener admits node keys only, a submit channel client and admin keys.
enum class KeyRole { node, client, admin };
std::string_view to_string(KeyRole role);

/// Reads an authorized_keys file: the admitted public keys, in `names` (if given) the name
/// each `NAME PUBKEY [ROLE]` line binds its key to, in `roles` (if given) every key's role.
/// Throws std::runtime_error naming the file, the line and the field (1: name, 2: public
/// key, 3: role) of a bad entry, or the line of a key listed twice.
std::set<std::string> load_authorized_keys(const std::string& path, std::map<std::string, std::string>* names = nullptr,
                                           std::map<std::string, KeyRole>* roles = nullptr);

/// Security settings of one node.
struct CurveConfig {
  bool enabled = false;
  KeyPair own;                          ///< This node's keys.
  std::string parent_public_key;        ///< To connect to the parent (workers).
  std::set<std::string> authorized;     ///< Public keys of admitted children.
  /// Public key -> the only node name it may join as (authorized_keys `NAME PUBKEY`
  /// lines); a key absent here may join under any name.
  std::map<std::string, std::string> key_names;
  /// The authorized_keys file `authorized` came from ("" = none): re-read when it changes,
  /// so that a key removed from it is refused for new connections (docs/security.md).
  std::string authorized_file;
  /// Public key -> its role (authorized_keys' third field; node when absent).
  std::map<std::string, KeyRole> key_roles;
};

/// Makes `socket` a CURVE server (ROUTER for children) or client (DEALER to the parent).
void apply_curve_server(zmq::socket_t& socket, const CurveConfig& config);
void apply_curve_client(zmq::socket_t& socket, const CurveConfig& config);

/// Who a ZAP handler admits, besides being listed (docs/security.md, "Roles").
struct ZapPolicy {
  std::set<KeyRole> admitted = {KeyRole::node};  ///< roles this context's sockets admit
  std::string own_public_key;                      ///< this node's own key: never admitted
  std::string guards = "the tree";                 ///< what the refusals say is guarded
};

/// The ZAP handler (RFC 27) of a context: a thread answering on inproc://zeromq.zap.01,
/// "200" for a CURVE client whose public key is authorized with an admitted role, "400"
/// otherwise. A refusal is logged with the peer address, its public key (never a secret)
/// and why, once per key and minute (the others are counted in the next line of that key).
/// The reply's User-Id is the client's public key (ZeroMQ's "User-Id" message property).
class ZapHandler {
 public:
  /// `authorized_file` ("" = none): checked every 100 ms (inode, size, mtime) and re-read
  /// when it changed; a file that no longer parses keeps the previous keys (logged).
  ZapHandler(zmq::context_t& context, std::set<std::string> authorized, std::string node_name,
             std::string authorized_file = {}, std::map<std::string, std::string> key_names = {});
  /// The keys, names and roles of `config`, with `policy` saying which roles are admitted.
  ZapHandler(zmq::context_t& context, const CurveConfig& config, std::string node_name, ZapPolicy policy);
  ~ZapHandler();
  std::uint64_t refused() const { return refused_; }
  /// The node name public key `key` is bound to (authorized_keys `NAME PUBKEY`), as of the
  /// file's last reading; nullopt if the key may join under any name. Thread-safe.
  std::optional<std::string> name_bound_to(const std::string& key) const;
  /// The role of public key `key` as of the file's last reading; nullopt if not listed.
  std::optional<KeyRole> role_of(const std::string& key) const;
  /// Times the authorized keys were re-read from the file.
  std::uint64_t reloads() const { return reloads_; }

 private:
  void loop();
  void reload_if_changed();
  /// Why `key` is refused ("" = admitted).
  std::string refusal(const std::string& key) const;
  void log_refusal(const std::string& address, const std::string& key, const std::string& why);
  zmq::context_t& context_;
  std::set<std::string> authorized_;
  mutable std::mutex names_mutex_;                  ///< guards key_names_ and key_roles_ (read by the node's loop)
  std::map<std::string, std::string> key_names_;   ///< public key -> bound node name
  std::map<std::string, KeyRole> key_roles_;        ///< public key -> role (absent: node)
  ZapPolicy policy_;
  /// Refusals logged per key: when last logged, and how many since (bounded: cleared past 4,096 keys).
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> refusals_logged_;
  std::string node_name_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> reloads_{0};
  std::string authorized_file_;
  std::string file_stamp_;  ///< inode, size and mtime of authorized_file_ when last read
  std::unique_ptr<zmq::socket_t> socket_;
  std::thread thread_;
};

}  // namespace treefarm::net
