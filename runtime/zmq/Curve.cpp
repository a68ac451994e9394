#include "runtime/zmq/Curve.hpp"

#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <algorithm>
#include <vector>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

namespace treefarm::net {

namespace {
std::string read_field(const std::string& path, const std::string& field) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read key file " + path);
  const std::regex line("^\\s*" + field + "\\s*=\\s*\"([^\"]{40})\"\\s*$");
  std::string text;
  while (std::getline(f, text)) {
    std::smatch m;
    if (std::regex_match(text, m, line)) return m[1].str();
  }
  throw std::runtime_error(path + ": no valid '" + field + "' (a 40-character Z85 key in quotes)");
}
}  // namespace

KeyPair generate_keypair() {
  if (!zmq_has("curve")) throw std::runtime_error("this libzmq has no CURVE support");
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0) throw std::runtime_error("zmq_curve_keypair failed");
  return KeyPair{pub, sec};
}

void check_key_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 64 && name[0] != '.' &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                           c == '-' || c == '.';
                  });
  if (!ok)
    throw std::invalid_argument("key name '" + name +
                                "' is not a plain node name (letters, digits, '_', '-', '.'; no '/'): give the "
                                "directory with --out DIR");
}

void write_keypair(const std::string& dir, const std::string& name, const KeyPair& keys, bool overwrite) {
  check_key_name(name);
  std::filesystem::create_directories(dir);
  const auto pub = std::filesystem::path(dir) / (name + ".key");
  const auto sec = std::filesystem::path(dir) / (name + ".key_secret");
  if (!overwrite)
    for (const auto& p : {pub, sec})
      if (std::filesystem::exists(p))
        throw std::runtime_error(p.string() + " exists; not overwritten (give --force to replace the key)");
  {
    // The secret is born 0600: open with the mode, never chmod after writing.
    const int fd = ::open(sec.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (overwrite ? 0 : O_EXCL), 0600);
    if (fd < 0) throw std::runtime_error("cannot create " + sec.string() + ": " + std::strerror(errno));
    if (::fchmod(fd, 0600) != 0) {  // an existing file replaced with --force keeps no wider mode
      ::close(fd);
      throw std::runtime_error("cannot set mode 0600 on " + sec.string() + ": " + std::strerror(errno));
    }
    const std::string text = "# treefarm CURVE secret key of " + name + ": keep private\npublic-key = \"" +
                             keys.public_key + "\"\nsecret-key = \"" + keys.secret_key + "\"\n";
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (::close(fd) != 0 || !written) throw std::runtime_error("cannot write " + sec.string());
  }
  std::ofstream f(pub, std::ios::trunc);
  f << "# treefarm CURVE public key of " << name << "\npublic-key = \"" << keys.public_key << "\"\n";
  if (!f.flush()) throw std::runtime_error("cannot write " + pub.string());
}

KeyPair load_secret_key_file(const std::string& path) {
  return KeyPair{read_field(path, "public-key"), read_field(path, "secret-key")};
}

std::string load_public_key_file(const std::string& path) { return read_field(path, "public-key"); }

std::string_view to_string(KeyRole role) {
  switch (role) {
    case KeyRole::node: return "node";
    case KeyRole::client: return "client";
    case KeyRole::admin: return "admin";
  }
  return "?";
}

namespace {
std::optional<KeyRole> role_from_string(std::string_view s) {
  for (auto r : {KeyRole::node, KeyRole::client, KeyRole::admin})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

/// A public key as authorized_keys gives it: 40 characters (Z85).
bool z85_key(const std::string& s) { return s.size() == 40; }
}  // namespace

std::set<std::string> load_authorized_keys(const std::string& path, std::map<std::string, std::string>* names,
                                           std::map<std::string, KeyRole>* roles) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read authorized keys file " + path);
  std::set<std::string> keys;
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    // Z85 keys may contain '#': a comment is a line starting with '#', or text after the
    // key separated by whitespace.
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    std::vector<std::string> fields;
    for (std::size_t at = 0; at < line.size() && fields.size() < 4;) {
      const auto end = line.find_first_of(" \t", at);
      fields.push_back(line.substr(at, end - at));
      at = end == std::string::npos ? line.size() : line.find_first_not_of(" \t", end);
    }
    const bool role_given = fields.size() >= 3 && role_from_string(fields[2]).has_value();
    // `NAME PUBKEY [ROLE]`: the key is bound to NAME; `PUBKEY [comment]`: the older, unbound
    // form (a node key). A first field of 40 characters reads as a key unless a role follows.
    const bool named = fields.size() >= 2 && (fields[0].size() != 40 || role_given);
    const std::string key = named ? fields[1] : fields[0];
    if (named && fields[0].size() > 128) throw std::runtime_error(where + "field 1 (name): longer than 128 bytes");
    if (!z85_key(key))
      throw std::runtime_error(where + (named ? "field 2 (public key)" : "field 1") + ": '" + key.substr(0, 48) +
                               "' is not a 40-character Z85 public key; expected `NAME PUBKEY [ROLE]` (ROLE node, client "
                               "or admin) or `PUBKEY`");
    KeyRole role = KeyRole::node;
    if (named && fields.size() >= 3 && fields[2][0] != '#') {
      if (!role_given)
        throw std::runtime_error(where + "field 3 (role): '" + fields[2].substr(0, 48) +
                                 "' is not a role; expected node, client or admin (or a comment starting with '#')");
      role = *role_from_string(fields[2]);
      if (fields.size() >= 4 && fields[3][0] != '#')
        throw std::runtime_error(where + "field 4: '" + fields[3].substr(0, 48) +
                                 "' after the role; expected the end of the line or a comment starting with '#'");
    }
    if (!keys.insert(key).second) throw std::runtime_error(where + "public key listed twice");
    if (named && names) (*names)[key] = fields[0];
    if (roles) (*roles)[key] = role;
  }
  return keys;
}

void apply_curve_server(zmq::socket_t& socket, const CurveConfig& config) {
  if (!config.enabled) return;
  socket.set(zmq::sockopt::zap_domain, "treefarm");
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, config.own.secret_key);
}

void apply_curve_client(zmq::socket_t& socket, const CurveConfig& config) {
  if (!config.enabled) return;
  socket.set(zmq::sockopt::curve_serverkey, config.parent_public_key);
  socket.set(zmq::sockopt::curve_publickey, config.own.public_key);
  socket.set(zmq::sockopt::curve_secretkey, config.own.secret_key);
}

namespace {
/// inode, size and mtime (ns) of a file; "" if it cannot be stat-ed.
std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
         "." + std::to_string(st.st_mtim.tv_nsec);
}
}  // namespace

ZapHandler::ZapHandler(zmq::context_t& context, std::set<std::string> authorized, std::string node_name,
                       std::string authorized_file, std::map<std::string, std::string> key_names)
    : ZapHandler(context,
                 CurveConfig{.enabled = true, .own = {}, .parent_public_key = {}, .authorized = std::move(authorized),
                             .key_names = std::move(key_names), .authorized_file = std::move(authorized_file),
                             .key_roles = {}},
                 std::move(node_name), ZapPolicy{}) {}

ZapHandler::ZapHandler(zmq::context_t& context, const CurveConfig& config, std::string node_name, ZapPolicy policy)
    : context_(context),
      authorized_(config.authorized),
      key_names_(config.key_names),
      key_roles_(config.key_roles),
      policy_(std::move(policy)),
      node_name_(std::move(node_name)),
      authorized_file_(config.authorized_file) {
  if (!authorized_file_.empty()) file_stamp_ = file_stamp(authorized_file_);
  socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::rep);
  socket_->set(zmq::sockopt::linger, 0);
  socket_->bind("inproc://zeromq.zap.01");
  thread_ = std::thread([this] { loop(); });  // last: every member above is set
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

// Only the ZAP thread replaces authorized_ (under names_mutex_, for role_of()).
void ZapHandler::reload_if_changed() {
  if (authorized_file_.empty()) return;
  const std::string stamp = file_stamp(authorized_file_);
  if (stamp == file_stamp_ || stamp.empty()) return;
  file_stamp_ = stamp;
  try {
    std::map<std::string, std::string> names;
    std::map<std::string, KeyRole> roles;
    auto keys = load_authorized_keys(authorized_file_, &names, &roles);
    spdlog::info("{}: re-read {}: {} authorized keys (was {}), {} bound to names; applies to new connections",
                 node_name_, authorized_file_, keys.size(), authorized_.size(), names.size());
    {
      const std::lock_guard lock(names_mutex_);  // role_of() reads authorized_ from other threads
      authorized_ = std::move(keys);
      key_names_ = std::move(names);
      key_roles_ = std::move(roles);
    }
    ++reloads_;
  } catch (const std::exception& e) {
    spdlog::error("{}: {} changed but cannot be used ({}); keeping the {} keys read before", node_name_,
                  authorized_file_, e.what(), authorized_.size());
  }
}

std::optional<std::string> ZapHandler::name_bound_to(const std::string& key) const {
  const std::lock_guard lock(names_mutex_);
  const auto it = key_names_.find(key);
  if (it == key_names_.end()) return std::nullopt;
  return it->second;
}

std::optional<KeyRole> ZapHandler::role_of(const std::string& key) const {
  const std::lock_guard lock(names_mutex_);
  if (!authorized_.contains(key)) return std::nullopt;
  const auto it = key_roles_.find(key);
  return it == key_roles_.end() ? KeyRole::node : it->second;
}

std::string ZapHandler::refusal(const std::string& key) const {
  if (key.empty()) return "not a CURVE client";
  if (!policy_.own_public_key.empty() && key == policy_.own_public_key)
    return "that is this node's own key (no peer connects with it; leave it out of the authorized keys)";
  if (!authorized_.contains(key)) return "not in the authorized keys";
  const auto role = role_of(key).value_or(KeyRole::node);
  if (policy_.admitted.contains(role)) return {};
  std::string admitted;
  for (auto r : policy_.admitted) admitted += (admitted.empty() ? "" : " or ") + std::string(to_string(r));
  const auto name = name_bound_to(key);
  return "a " + std::string(to_string(role)) + " key" + (name ? " ('" + *name + "')" : std::string()) + "; " +
         policy_.guards + " admits " + admitted + " keys only (docs/security.md, \"Roles\")";
}

void ZapHandler::log_refusal(const std::string& address, const std::string& key, const std::string& why) {
  const auto now = std::chrono::steady_clock::now();
  if (refusals_logged_.size() > 4096) refusals_logged_.clear();  // a key-spraying peer costs no memory
  const auto [it, first] = refusals_logged_.try_emplace(key, now, 0);
  if (!first && now - it->second.first < std::chrono::seconds(60)) {
    ++it->second.second;
    return;
  }
  const std::uint64_t since = first ? 0 : it->second.second;
  it->second = {now, 0};
  spdlog::warn("{}: refused a connection to {} from {} (public key {}): {}{}", node_name_, policy_.guards, address,
               key.empty() ? "(none)" : key, why,
               since ? " (and " + std::to_string(since) + " more times since the last such line)" : std::string());
}

void ZapHandler::loop() {
  while (!stop_) {
    reload_if_changed();
    zmq::pollitem_t item{static_cast<void*>(*socket_), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    if (!(item.revents & ZMQ_POLLIN)) continue;
    std::vector<zmq::message_t> frames;
    do {
      zmq::message_t m;
      (void)socket_->recv(m, zmq::recv_flags::none);
      frames.push_back(std::move(m));
    } while (frames.back().more());
    // RFC 27: version, request id, domain, address, identity, mechanism, credentials...
    std::string status = "400", text = "refused";
    std::string client_key;
    const std::string address = frames.size() > 3 ? frames[3].to_string() : "?";
    if (frames.size() >= 7 && frames[0].to_string() == "1.0" && frames[5].to_string() == "CURVE" && frames[6].size() == 32) {
      char z85[41];
      zmq_z85_encode(z85, static_cast<const uint8_t*>(frames[6].data()), 32);
      client_key = z85;
    }
    if (const auto why = refusal(client_key); why.empty()) {
      status = "200";
      text = "OK";
    } else {
      ++refused_;
      log_refusal(address, client_key, why);
    }
    const std::string version = "1.0";
    const std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
    socket_->send(zmq::buffer(version), zmq::send_flags::sndmore);
    socket_->send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    socket_->send(zmq::buffer(status), zmq::send_flags::sndmore);
    socket_->send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_->send(zmq::buffer(status == "200" ? client_key : std::string()), zmq::send_flags::sndmore);
    socket_->send(zmq::message_t(), zmq::send_flags::none);
  }
}

}  // namespace treefarm::net
