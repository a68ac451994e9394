// treefarm keygen (docs/commands.md, docs/security.md).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/zmq/Curve.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct KeygenOptions {
  std::string dir = "keys";
  std::vector<std::string> names;
  std::string role = "node";  ///< node | client | admin | master (not listed)
  bool force = false;
};

namespace fs = std::filesystem;

int run_keygen(const KeygenOptions& o) {
  // Everything is checked before anything is written: a refused run leaves no half set.
  for (const auto& name : o.names) {
    try {
      net::check_key_name(name);
    } catch (const std::invalid_argument& e) {
      throw cli_support::UsageError(e.what());
    }
    if (!o.force)
      for (const char* ext : {".key", ".key_secret"})
        if (fs::exists(fs::path(o.dir) / (name + ext)))
          throw std::runtime_error((fs::path(o.dir) / (name + ext)).string() +
                                   " exists; not overwritten (give --force to replace the key)");
  }
  fs::create_directories(o.dir);
  // authorized_keys: the lines of the names not (re)generated now are kept; a replaced
  // key leaves the file (it would stay admitted otherwise). Written to a temporary file
  // and renamed, so that a node re-reading it never sees half a file.
  const fs::path authorized = fs::path(o.dir) / "authorized_keys";
  std::vector<std::string> kept;
  if (fs::exists(authorized) && !fs::is_regular_file(authorized))
    throw cli_support::BadInput(authorized.string() + ": not a readable authorized_keys file (a file of key lines)");
  if (std::ifstream in(authorized); in) {
    std::string line;
    while (std::getline(in, line)) {
      bool replaced = false;
      for (const auto& name : o.names)
        // Both forms: `PUBKEY  # NAME` and `NAME PUBKEY` (names bound to keys).
        if (line.ends_with("# " + name) || line.starts_with(name + " ") || line.starts_with(name + "\t"))
          replaced = true;
      if (!replaced) kept.push_back(line);
    }
  }
  std::ostringstream text;
  for (const auto& line : kept) text << line << "\n";
  for (const auto& name : o.names) {
    const auto pair = net::generate_keypair();
    net::write_keypair(o.dir, name, pair, o.force);
    // The key may join (node) or submit (client, admin) only as NAME; the master's is not
    // listed: nobody connects with it (docs/security.md, "Roles").
    if (o.role != "master") text << name << " " << pair.public_key << " " << o.role << "\n";
    std::cout << "wrote " << (fs::path(o.dir) / (name + ".key")).string() << " and " << name
              << ".key_secret (mode 0600: keep it private)"
              << (o.role == "master" ? ", not listed in authorized_keys" : ", listed as a " + o.role + " key") << "\n";
  }
  const fs::path tmp = authorized.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text.str();
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, authorized);
  std::cout << "public keys in " << authorized.string() << "\n";
  return 0;
}
}  // namespace

void add_keygen_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<KeygenOptions>();
  auto* keygen = app.add_subcommand("keygen", "Write CURVE key pairs (NAME.key, NAME.key_secret) and an authorized_keys file");
  keygen->add_option("names", o->names, "Node names, one key pair each (plain names: the directory is --out)")->required();
  keygen->add_option("--out", o->dir, "Directory to write the keys to (created if missing)")->capture_default_str();
  keygen->add_option("--role", o->role,
                     "What the keys may do (docs/security.md, \"Roles\"): node = join the tree; client = submit to a "
                     "served master, read its status, cancel its own experiments; admin = a client that may cancel "
                     "any experiment; master = the tree's master, not listed in authorized_keys")
      ->check(CLI::IsMember({"node", "client", "admin", "master"}))
      ->capture_default_str();
  keygen->add_flag("--force", o->force, "Replace existing keys of these names (their old public keys leave authorized_keys)");
  out.push_back({keygen, [o] { return run_keygen(*o); }});
}

}  // namespace treefarm::cli
