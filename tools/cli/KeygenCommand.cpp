// treefarm keygen (docs/commands.md).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "runtime/zmq/Curve.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct KeygenOptions {
  std::string dir = "keys";
  std::vector<std::string> names;
};

int run_keygen(const KeygenOptions& o) {
  std::filesystem::create_directories(o.dir);
  std::ofstream authorized(std::filesystem::path(o.dir) / "authorized_keys", std::ios::app);
  for (const auto& name : o.names) {
    const auto pair = net::generate_keypair();
    net::write_keypair(o.dir, name, pair);
    authorized << name << " " << pair.public_key << "\n";  // the key may join only as NAME
    std::cout << "wrote " << o.dir << "/" << name << ".key and " << name << ".key_secret (keep it private)\n";
  }
  std::cout << "public keys appended to " << o.dir << "/authorized_keys\n";
  return 0;
}
}  // namespace

void add_keygen_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<KeygenOptions>();
  auto* keygen = app.add_subcommand("keygen", "Write CURVE key pairs (NAME.key, NAME.key_secret) and an authorized_keys file");
  keygen->add_option("names", o->names, "Node names, one key pair each")->required();
  keygen->add_option("--out", o->dir, "Directory to write the keys to")->capture_default_str();
  out.push_back({keygen, [o] { return run_keygen(*o); }});
}

}  // namespace treefarm::cli
