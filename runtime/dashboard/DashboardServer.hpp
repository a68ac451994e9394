#pragma once
/// @file DashboardServer.hpp
/// The live dashboard's HTTP server (docs/dashboard.md), cpp-httplib on threads of its own:
///   GET /             the page (HTML; its script, style and Chart.js at /dashboard.js,
///                     /dashboard.css, /chart.js, compiled in)
///   GET /api/status   the view as one JSON object (Feed::view)
///   GET /api/events   Server-Sent Events: the view again each time it changes, at most
///                     twice a second ("data: JSON\n\n")
///   GET /jobs/ID/report.html  a served master's finished experiment ID: the report page
///                     (its data at /jobs/ID/data.js; 404 when it wrote no results)
/// Read-only; every answer carries a Content-Security-Policy that allows nothing from
/// elsewhere. On a loopback address anyone on this machine may read it; elsewhere only
/// with `allow_remote`, and then every request needs the token printed once (as
/// Jupyter's), as `?token=` or the cookie the page sets.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "runtime/dashboard/Address.hpp"
#include "runtime/dashboard/Feed.hpp"

namespace httplib { class Server; }

namespace treefarm::dashboard {

struct ServerOptions {
  Address address;
  /// Serve on a non-loopback address (`--dashboard-remote`): a token is then required.
  bool allow_remote = false;
  /// Ask for the token on a loopback address too (a machine shared with other users).
  bool require_token = false;
  /// The bound address is written here as "http://HOST:PORT/" (with the token, if any)
  /// once the server listens ("" = none).
  std::string address_file;
  /// Concurrent /api/events streams (each holds a thread); more get 503.
  std::size_t max_streams = 8;
  /// seconds between two events of a stream (at least).
  double event_interval = 0.5;
};

class DashboardServer {
 public:
  /// Binds and starts serving `feed` (which must outlive the server). @throws
  /// std::invalid_argument for a non-loopback address without allow_remote, and
  /// std::runtime_error naming the address when it cannot be bound.
  DashboardServer(Feed& feed, ServerOptions options);
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  /// "http://HOST:PORT/" as bound (the real port when 0 was asked), with "?token=..."
  /// when a token is required.
  const std::string& url() const { return url_; }
  std::uint16_t port() const { return port_; }

 private:
  Feed& feed_;
  ServerOptions opt_;
  std::string token_;  ///< "" on loopback
  std::string url_;
  std::uint16_t port_ = 0;
  std::atomic<std::size_t> streams_{0};
  std::atomic<bool> listening_done_{false};  ///< listen_after_bind returned
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
};

}  // namespace treefarm::dashboard
