#include "runtime/dashboard/DashboardServer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <thread>

#include <httplib.h>

#include "runtime/dashboard/EventsClient.hpp"

using namespace treefarm::dashboard;
using nlohmann::json;

namespace {
ServerOptions any_port() {
  ServerOptions o;
  o.address = parse_address("127.0.0.1:0");
  return o;
}

json status(double elapsed, std::uint64_t done) {
  return {{"elapsed", elapsed},
          {"apps", json::array({json{{"name", "mm"}, {"tasks", 100}, {"done", done}, {"throughput", 1.0}, {"predicted", nullptr}}})},
          {"nodes", json::array({json{{"name", "m"}, {"parent", ""}, {"cores", 1}, {"done", done}}})}};
}

bool eventually(const std::function<bool()>& condition, double seconds = 10) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}
}  // namespace

TEST(DashboardServer, ServesThePageItsAssetsAndTheStatusWithAContentSecurityPolicy) {
  Feed feed;
  DashboardServer server(feed, any_port());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/");
  httplib::Client client("127.0.0.1", server.port());
  const auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<script src=\"dashboard.js\"></script>"), std::string::npos);
  const auto csp = page->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  const auto chart = client.Get("/chart.js");
  ASSERT_TRUE(chart);
  EXPECT_NE(chart->body.find("Chart.js v3"), std::string::npos);
  ASSERT_TRUE(client.Get("/dashboard.js"));
  feed.publish(status(1, 7), json(), nullptr);
  const auto st = client.Get("/api/status");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->get_header_value("Content-Type"), "application/json");
  const auto v = json::parse(st->body);
  EXPECT_EQ(v["running"]["apps"][0]["done"], 7);
  EXPECT_EQ(v["tree"][0]["name"], "m");
  const auto missing = client.Get("/etc/passwd");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  const auto icon = client.Get("/favicon.ico");  // a browser asks for it: no 404 in its console
  ASSERT_TRUE(icon);
  EXPECT_EQ(icon->status, 204);
  EXPECT_EQ(icon->body, "");
}

TEST(DashboardServer, IsReadOnly) {
  Feed feed;
  DashboardServer server(feed, any_port());
  httplib::Client client("127.0.0.1", server.port());
  const auto r = client.Post("/api/status", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
}

TEST(DashboardServer, EventsStreamEachNewSnapshot) {
  Feed feed;
  ServerOptions o = any_port();
  o.event_interval = 0.05;
  DashboardServer server(feed, o);
  EventsClient events(server.url());
  ASSERT_TRUE(eventually([&] { return events.events() >= 1; })) << "no first event";
  for (int i = 1; i <= 3; ++i) {
    feed.publish(status(i, static_cast<std::uint64_t>(10 * i)), json(), nullptr);
    ASSERT_TRUE(eventually([&] { return events.events() >= static_cast<std::uint64_t>(i + 1); })) << "event " << i + 1;
  }
  const auto last = json::parse(events.last());
  EXPECT_EQ(last["running"]["apps"][0]["done"], 30);
}

TEST(DashboardServer, ANonLoopbackAddressIsRefusedUnlessAllowed) {
  Feed feed;
  ServerOptions o;
  o.address = parse_address("0.0.0.0:0");
  try {
    DashboardServer server(feed, o);
    FAIL() << "served on " << server.url();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--dashboard-remote"), std::string::npos) << e.what();
  }
}

TEST(DashboardServer, WithATokenEveryRequestNeedsItOrItsCookie) {
  Feed feed;
  ServerOptions o = any_port();
  o.require_token = true;
  DashboardServer server(feed, o);
  const auto at = server.url().find("?token=");
  ASSERT_NE(at, std::string::npos) << server.url();
  const std::string token = server.url().substr(at + 7);
  EXPECT_EQ(token.size(), 32u);
  httplib::Client client("127.0.0.1", server.port());
  const auto refused = client.Get("/api/status");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_EQ(refused->body.find(token), std::string::npos);
  const auto wrong = client.Get("/api/status?token=" + std::string(32, '0'));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 403);
  const auto page = client.Get("/?token=" + token);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  const auto cookie = page->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  const auto with_cookie = client.Get("/api/status", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  ASSERT_TRUE(with_cookie);
  EXPECT_EQ(with_cookie->status, 200);
  EXPECT_EQ(http_get(server.url(), "/api/status").first, 200);  // the printed address works as it is
}

TEST(DashboardServer, TheAddressFileHoldsTheUrl) {
  Feed feed;
  ServerOptions o = any_port();
  o.address_file = testing::TempDir() + "/dashboard-url-" + std::to_string(::getpid());
  DashboardServer server(feed, o);
  std::ifstream f(o.address_file);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, server.url());
  std::remove(o.address_file.c_str());
}

TEST(DashboardServer, StopsPromptlyWithAStreamOpen) {
  Feed feed;
  auto server = std::make_unique<DashboardServer>(feed, any_port());
  EventsClient events(server->url());
  ASSERT_TRUE(eventually([&] { return events.events() >= 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  server.reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}
