// CURVE key files and the authorized_keys format.
#include "runtime/zmq/Curve.hpp"

#include <filesystem>
#include <chrono>
#include <fstream>
#include <thread>

#include <map>

#include <gtest/gtest.h>

#include "tests/support/TempDir.hpp"

namespace treefarm::net {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

TEST(Curve, KeyFilesRoundTripAndTheSecretFileIsPrivate) {
  TempDir dir("curve");
  const auto keys = generate_keypair();
  EXPECT_EQ(keys.public_key.size(), 40u);
  EXPECT_EQ(keys.secret_key.size(), 40u);
  write_keypair(dir.path().string(), "w1", keys);
  EXPECT_EQ(load_public_key_file((dir.path() / "w1.key").string()), keys.public_key);
  const auto back = load_secret_key_file((dir.path() / "w1.key_secret").string());
  EXPECT_EQ(back.public_key, keys.public_key);
  EXPECT_EQ(back.secret_key, keys.secret_key);
  EXPECT_EQ(fs::status(dir.path() / "w1.key_secret").permissions() & fs::perms::others_all, fs::perms::none);
  // The public file does not contain the secret.
  std::ifstream f(dir.path() / "w1.key");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(keys.secret_key), std::string::npos);
}

TEST(Curve, AuthorizedKeysAcceptKeysContainingHashAndSkipComments) {
  TempDir dir("curve");
  const std::string with_hash = "0123456789#abcdefghij0123456789#abcdefgh";  // Z85 has '#'
  ASSERT_EQ(with_hash.size(), 40u);
  std::ofstream(dir.path() / "authorized_keys") << "# the tree's workers\n\n  " << with_hash << "  # w1\n"
                                                 << "#commented-out key\n";
  const auto keys = load_authorized_keys((dir.path() / "authorized_keys").string());
  EXPECT_EQ(keys, (std::set<std::string>{with_hash}));
}

TEST(Curve, AuthorizedKeysBindNamesToKeysAndStillReadTheOldForm) {
  TempDir dir("curve");
  const std::string k1 = "0123456789#abcdefghij0123456789#abcdefgh";
  const std::string k2 = "ABCDEFGHIJ0123456789ABCDEFGHIJ0123456789";
  std::ofstream(dir.path() / "authorized_keys") << "w1 " << k1 << "\n" << k2 << "  # w2 (old form: any name)\n";
  std::map<std::string, std::string> names;
  const auto keys = load_authorized_keys((dir.path() / "authorized_keys").string(), &names);
  EXPECT_EQ(keys, (std::set<std::string>{k1, k2}));
  EXPECT_EQ(names, (std::map<std::string, std::string>{{k1, "w1"}}));
  // A key listed twice (e.g. under two names) is an error naming the line.
  std::ofstream(dir.path() / "twice") << "w1 " << k1 << "\nw2 " << k1 << "\n";
  try {
    load_authorized_keys((dir.path() / "twice").string(), &names);
    FAIL() << "accepted one key under two names";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("twice:2"), std::string::npos) << e.what();
  }
}

TEST(Curve, BadKeyFilesAreErrorsNamingTheFileAndLine) {
  TempDir dir("curve");
  std::ofstream(dir.path() / "authorized_keys") << "short-key\n";
  try {
    load_authorized_keys((dir.path() / "authorized_keys").string());
    FAIL() << "accepted a short key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("authorized_keys:1"), std::string::npos) << e.what();
  }
  std::ofstream(dir.path() / "x.key_secret") << "public-key = \"tooshort\"\n";
  EXPECT_THROW(load_secret_key_file((dir.path() / "x.key_secret").string()), std::runtime_error);
  EXPECT_THROW(load_public_key_file((dir.path() / "missing.key").string()), std::runtime_error);
}


// keygen must not clobber a key, must not write through a name with a '/', and
// a replaced secret file ends 0600 even if the old one was wider.
TEST(Curve, ExistingKeysAreKeptUnlessOverwriteAndNamesArePlain) {
  TempDir dir("curve");
  const auto first = generate_keypair();
  write_keypair(dir.path().string(), "w1", first);
  const auto second = generate_keypair();
  try {
    write_keypair(dir.path().string(), "w1", second);
    FAIL() << "an existing key was overwritten";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("w1.key"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(load_secret_key_file((dir.path() / "w1.key_secret").string()).secret_key, first.secret_key);
  fs::permissions(dir.path() / "w1.key_secret", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                                    fs::perms::others_read);
  write_keypair(dir.path().string(), "w1", second, /*overwrite=*/true);
  EXPECT_EQ(load_secret_key_file((dir.path() / "w1.key_secret").string()).secret_key, second.secret_key);
  EXPECT_EQ(fs::status(dir.path() / "w1.key_secret").permissions() & (fs::perms::group_all | fs::perms::others_all),
            fs::perms::none);
  EXPECT_THROW(write_keypair(dir.path().string(), "a/b", second), std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir.path() / "a"));
}

// a key removed from authorized_keys is refused for new connections, without a
// restart (the ZAP handler re-reads the file when it changes).
TEST(Curve, ZapHandlerReReadsTheAuthorizedKeysFile) {
  TempDir dir("curve");
  const auto server_keys = generate_keypair();
  const auto client_keys = generate_keypair();
  const auto file = (dir.path() / "authorized_keys").string();
  std::ofstream(file) << client_keys.public_key << "  # w1\n";
  zmq::context_t ctx;
  ZapHandler zap(ctx, load_authorized_keys(file), "test", file);
  CurveConfig server_cfg{true, server_keys, "", {}, {}, file, {}};
  zmq::socket_t server(ctx, zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  apply_curve_server(server, server_cfg);
  server.bind("tcp://127.0.0.1:*");
  const std::string endpoint = server.get(zmq::sockopt::last_endpoint);
  const auto arrives = [&](const std::string& text, int timeout_ms) {
    CurveConfig client_cfg{true, client_keys, server_keys.public_key, {}, {}, "", {}};
    zmq::socket_t client(ctx, zmq::socket_type::dealer);
    client.set(zmq::sockopt::linger, 0);
    apply_curve_client(client, client_cfg);
    client.connect(endpoint);
    (void)client.send(zmq::buffer(text), zmq::send_flags::dontwait);
    zmq::pollitem_t item{static_cast<void*>(server), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
    if (!(item.revents & ZMQ_POLLIN)) return false;
    zmq::message_t id, body;
    (void)server.recv(id);
    (void)server.recv(body);
    return body.to_string() == text;
  };
  EXPECT_TRUE(arrives("admitted", 3000));
  EXPECT_EQ(zap.refused(), 0u);
  // Remove the key: write a new file and rename it over the old one (what keygen does).
  std::ofstream(file + ".new") << "# nobody\n";
  fs::rename(file + ".new", file);
  for (int i = 0; i < 50 && zap.reloads() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(zap.reloads(), 1u);
  EXPECT_FALSE(arrives("refused", 700));
  EXPECT_GE(zap.refused(), 1u);
}

}  // namespace
TEST(Curve, ZapHandlerReReadsTheNamesKeysAreBoundTo) {
  TempDir dir("curve");
  const auto key = generate_keypair();
  const auto other = generate_keypair();
  const auto file = (dir.path() / "authorized_keys").string();
  std::ofstream(file) << "w1 " << key.public_key << "\n" << other.public_key << "\n";
  std::map<std::string, std::string> names;
  auto keys = load_authorized_keys(file, &names);
  zmq::context_t ctx;
  ZapHandler zap(ctx, std::move(keys), "test", file, names);
  EXPECT_EQ(zap.name_bound_to(key.public_key), "w1");
  EXPECT_EQ(zap.name_bound_to(other.public_key), std::nullopt);  // the old form: any name
  // The user moves the key to another name (a new file renamed over the old one).
  std::ofstream(file + ".new") << "w2 " << key.public_key << "\nw3 " << other.public_key << "\n";
  fs::rename(file + ".new", file);
  for (int i = 0; i < 50 && zap.reloads() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(zap.reloads(), 1u);
  EXPECT_EQ(zap.name_bound_to(key.public_key), "w2");
  EXPECT_EQ(zap.name_bound_to(other.public_key), "w3");
}


// Roles (docs/security.md): `NAME PUBKEY [ROLE]`; a bad line names file, line and field.
TEST(Curve, AuthorizedKeysGiveEachKeyARoleAndBadLinesNameTheirField) {
  TempDir dir("curve");
  const auto w = generate_keypair(), c = generate_keypair(), a = generate_keypair(), old = generate_keypair();
  const auto file = (dir.path() / "authorized_keys").string();
  std::ofstream(file) << "w1 " << w.public_key << "\nalice " << c.public_key << " client  # a user\nroot "
                      << a.public_key << " admin\n" << old.public_key << "  # old form\n";
  std::map<std::string, std::string> names;
  std::map<std::string, KeyRole> roles;
  EXPECT_EQ(load_authorized_keys(file, &names, &roles).size(), 4u);
  EXPECT_EQ(roles, (std::map<std::string, KeyRole>{{w.public_key, KeyRole::node}, {c.public_key, KeyRole::client},
                                                    {a.public_key, KeyRole::admin}, {old.public_key, KeyRole::node}}));
  EXPECT_EQ(names.at(c.public_key), "alice");
  const auto error_of = [&](const std::string& text) {
    std::ofstream(file) << "# first\n" << text << "\n";
    try {
      load_authorized_keys(file);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("bob " + c.public_key + " superuser").find("authorized_keys:2: field 3 (role): 'superuser' is not a role"),
            std::string::npos);
  EXPECT_NE(error_of("bob " + c.public_key.substr(0, 39) + " client").find("authorized_keys:2: field 2 (public key)"),
            std::string::npos);
  EXPECT_NE(error_of("bob " + c.public_key + " client extra").find("authorized_keys:2: field 4"), std::string::npos);
  EXPECT_NE(error_of("short").find("authorized_keys:2: field 1"), std::string::npos);
}

// Each socket admits only its roles: a tree's handler node keys, a submit channel's client
// and admin keys; neither admits the node's own key, even listed.
TEST(Curve, ZapHandlerAdmitsOnlyTheRolesOfTheSocketItGuardsAndNeverTheNodesOwnKey) {
  TempDir dir("curve");
  const auto server = generate_keypair(), node = generate_keypair(), user = generate_keypair();
  const auto file = (dir.path() / "authorized_keys").string();
  std::ofstream(file) << "w1 " << node.public_key << "\nalice " << user.public_key << " client\nm " << server.public_key
                      << " node\n";
  CurveConfig config{true, server, "", {}, {}, file, {}};
  config.authorized = load_authorized_keys(file, &config.key_names, &config.key_roles);
  const auto admitted = [&](const ZapPolicy& policy, const KeyPair& client_keys) {
    zmq::context_t ctx;
    ZapHandler zap(ctx, config, "test", policy);
    zmq::socket_t router(ctx, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    apply_curve_server(router, config);
    router.bind("tcp://127.0.0.1:*");
    zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    apply_curve_client(dealer, CurveConfig{true, client_keys, server.public_key, {}, {}, "", {}});
    dealer.connect(router.get(zmq::sockopt::last_endpoint));
    (void)dealer.send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
    zmq::pollitem_t item{static_cast<void*>(router), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(1500));
    if (!(item.revents & ZMQ_POLLIN)) return false;
    zmq::message_t id, body;
    (void)router.recv(id);
    (void)router.recv(body);
    EXPECT_EQ(std::string(body.gets("User-Id")), client_keys.public_key);
    EXPECT_EQ(zap.role_of(client_keys.public_key), config.key_roles.at(client_keys.public_key));
    return true;
  };
  const ZapPolicy tree{{KeyRole::node}, server.public_key, "the tree"};
  const ZapPolicy channel{{KeyRole::client, KeyRole::admin}, server.public_key, "the submit channel"};
  EXPECT_TRUE(admitted(tree, node));
  EXPECT_FALSE(admitted(tree, user));
  EXPECT_FALSE(admitted(tree, server));
  EXPECT_TRUE(admitted(channel, user));
  EXPECT_FALSE(admitted(channel, node));
}

}  // namespace treefarm::net
