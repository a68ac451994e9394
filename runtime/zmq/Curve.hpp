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
/// Writes DIR/NAME.key and DIR/NAME.key_secret (0600).
void write_keypair(const std::string& dir, const std::string& name, const KeyPair& keys);
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
};

/// Makes `socket` a CURVE server (ROUTER for children) or client (DEALER to the parent).
void apply_curve_server(zmq::socket_t& socket, const CurveConfig& config);
void apply_curve_client(zmq::socket_t& socket, const CurveConfig& config);

/// The ZAP handler (RFC 27) of a context: a thread answering on inproc://zeromq.zap.01,
/// "200" for a CURVE client whose public key is authorized, "400" otherwise (logged with
/// the peer address and its public key, never a secret).
class ZapHandler {
 public:
  ZapHandler(zmq::context_t& context, std::set<std::string> authorized, std::string node_name);
  ~ZapHandler();
  std::uint64_t refused() const { return refused_; }

 private:
  void loop();
  zmq::context_t& context_;
  std::set<std::string> authorized_;
  std::string node_name_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> refused_{0};
  std::unique_ptr<zmq::socket_t> socket_;
  std::thread thread_;
};

}  // namespace treefarm::net
