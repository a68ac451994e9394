#include "runtime/dashboard/EventsClient.hpp"

#include <chrono>

#include <httplib.h>

namespace treefarm::dashboard {

namespace {
/// "http://HOST:PORT/?token=T" -> ("http://HOST:PORT", "?token=T").
std::pair<std::string, std::string> split_url(const std::string& url) {
  const auto scheme = url.find("://");
  const auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return {url, ""};
  const auto query = url.find('?', slash);
  return {url.substr(0, slash), query == std::string::npos ? "" : url.substr(query)};
}
}  // namespace

std::pair<int, std::string> http_get(const std::string& url, const std::string& path, double timeout_seconds) {
  const auto [base, query] = split_url(url);
  httplib::Client client(base);
  const auto timeout = std::chrono::duration<double>(timeout_seconds);
  client.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  const auto res = client.Get(path + query);
  if (!res) return {0, httplib::to_string(res.error())};  // why no answer came
  return {res->status, res->body};
}

EventsClient::EventsClient(const std::string& url) {
  std::tie(base_, path_) = split_url(url);
  path_ = "/api/events" + path_;
  client_ = std::make_unique<httplib::Client>(base_);
  client_->set_read_timeout(std::chrono::seconds(5));
  thread_ = std::thread([this] {
    std::string pending;
    while (!stop_) {
      client_->Get(path_, [&](const char* data, std::size_t size) {
        pending.append(data, size);
        for (auto end = pending.find("\n\n"); end != std::string::npos; end = pending.find("\n\n")) {
          std::string event = pending.substr(0, end);
          pending.erase(0, end + 2);
          if (event.starts_with("data: ")) {
            {
              std::lock_guard lock(mu_);
              last_ = event.substr(6);
            }
            ++events_;
          }
        }
        return !stop_;
      });
      pending.clear();
      for (int i = 0; i < 5 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

EventsClient::~EventsClient() {
  stop_ = true;
  client_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string EventsClient::last() const {
  std::lock_guard lock(mu_);
  return last_;
}

}  // namespace treefarm::dashboard
