#pragma once
/// @file Curve.hpp
/// CURVE keys and authentication (libzmq's CURVE, with libsodium): key files, the list
/// of admitted public keys, and the ZAP handler that admits only those.
///
/// Key files (written by `treefarm keygen`, docs/security.md):
///   NAME.key         public-key = "<40 Z85 characters>"
///   NAME.key_secret  public-key = "..." and secret-key = "..." (mode 0600)
///   authorized_keys  one admitted key per line, either `NAME PUBKEY` (the key may join
///                    only as node NAME: names bound to keys, docs/security.md) or, the
///                    older form, `PUBKEY [comment]` (any name); '#' starts a comment line

#include <atomic>
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
/// Reads an authorized_keys file: the admitted public keys, and in `names` (if given) the
/// node name each `NAME PUBKEY` line binds its key to. Throws std::runtime_error naming
/// the file and line of a bad entry or of a key listed twice.
std::set<std::string> load_authorized_keys(const std::string& path, std::map<std::string, std::string>* names = nullptr);

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
};

/// Makes `socket` a CURVE server (ROUTER for children) or client (DEALER to the parent).
void apply_curve_server(zmq::socket_t& socket, const CurveConfig& config);
void apply_curve_client(zmq::socket_t& socket, const CurveConfig& config);

/// The ZAP handler (RFC 27) of a context: a thread answering on inproc://zeromq.zap.01,
/// "200" for a CURVE client whose public key is authorized, "400" otherwise (logged with
/// the peer address and its public key, never a secret).
class ZapHandler {
 public:
  /// `authorized_file` ("" = none): checked every 100 ms (inode, size, mtime) and re-read
  /// when it changed; a file that no longer parses keeps the previous keys (logged).
  ZapHandler(zmq::context_t& context, std::set<std::string> authorized, std::string node_name,
             std::string authorized_file = {}, std::map<std::string, std::string> key_names = {});
  ~ZapHandler();
  std::uint64_t refused() const { return refused_; }
  /// The node name public key `key` is bound to (authorized_keys `NAME PUBKEY`), as of the
  /// file's last reading; nullopt if the key may join under any name. Thread-safe.
  std::optional<std::string> name_bound_to(const std::string& key) const;
  /// Times the authorized keys were re-read from the file.
  std::uint64_t reloads() const { return reloads_; }

 private:
  void loop();
  void reload_if_changed();
  zmq::context_t& context_;
  std::set<std::string> authorized_;
  mutable std::mutex names_mutex_;                  ///< guards key_names_ (read by the node's loop)
  std::map<std::string, std::string> key_names_;   ///< public key -> bound node name
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
