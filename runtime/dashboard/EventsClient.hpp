#pragma once
/// @file EventsClient.hpp
/// A reader of a dashboard (docs/dashboard.md) as a browser is one: GET requests, and an
/// /api/events stream followed on a thread of its own. Used by `treefarm bench dispatch
/// --dashboard` (the root's cost with a client connected) and by the tests.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace httplib { class Client; }

namespace treefarm::dashboard {

/// GET `path` (e.g. "/api/status") from the dashboard at `url` ("http://HOST:PORT/",
/// a "?token=" kept). Returns the HTTP status (0 when there was no answer) and the body.
std::pair<int, std::string> http_get(const std::string& url, const std::string& path, double timeout_seconds = 5);

/// Follows `url`'s /api/events until destroyed, reconnecting when the stream ends.
class EventsClient {
 public:
  explicit EventsClient(const std::string& url);
  ~EventsClient();
  EventsClient(const EventsClient&) = delete;
  EventsClient& operator=(const EventsClient&) = delete;

  /// Events received so far.
  std::uint64_t events() const { return events_.load(); }
  /// The last event's data (its JSON text), "" before the first.
  std::string last() const;

 private:
  std::string base_, path_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> events_{0};
  mutable std::mutex mu_;
  std::string last_;
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
};

}  // namespace treefarm::dashboard
