#include "runtime/dashboard/DashboardServer.hpp"

#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include <httplib.h>

#include "runtime/dashboard/Page.hpp"

namespace treefarm::dashboard {

namespace {
constexpr const char* csp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
constexpr const char* token_cookie = "treefarm_dashboard_token";

std::string random_token() {
  std::random_device rd;
  std::string out;
  static constexpr char hex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) out += hex[rd() & 15u];
  return out;
}

/// Compares without stopping at the first difference (no timing hint about the token).
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

std::string cookie_value(const httplib::Request& req, const std::string& name) {
  const auto cookies = req.get_header_value("Cookie");
  for (std::size_t at = 0; at < cookies.size();) {
    auto end = cookies.find(';', at);
    if (end == std::string::npos) end = cookies.size();
    auto item = cookies.substr(at, end - at);
    item.erase(0, item.find_first_not_of(' '));
    if (item.starts_with(name + "=")) return item.substr(name.size() + 1);
    at = end + 1;
  }
  return {};
}
}  // namespace

DashboardServer::DashboardServer(Feed& feed, ServerOptions options)
    : feed_(feed), opt_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  const bool loopback = is_loopback_host(opt_.address.host);
  if (!loopback && !opt_.allow_remote)
    throw std::invalid_argument("--dashboard " + to_string(opt_.address) +
                                ": not a loopback address; the dashboard has no encryption and would be readable by "
                                "the network: add --dashboard-remote to serve it there with a token, or use 127.0.0.1");
  if (!loopback || opt_.require_token) token_ = random_token();
  auto& http = *http_;
  const std::size_t threads = opt_.max_streams + 4;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(8192);  // bytes: every request is a GET
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  http.set_keep_alive_max_count(100);
  http.set_default_headers({{"Content-Security-Policy", csp},
                            {"X-Content-Type-Options", "nosniff"},
                            {"Referrer-Policy", "no-referrer"},
                            {"Cache-Control", "no-store"}});
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_content("read-only: GET only\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (token_.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const auto given = req.get_param_value("token");
    if (same_secret(given, token_)) {
      res.set_header("Set-Cookie", std::string(token_cookie) + "=" + token_ + "; HttpOnly; SameSite=Strict; Path=/");
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (same_secret(cookie_value(req, token_cookie), token_)) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 403;
    res.set_content("a token is required: open the address the dashboard printed when it started\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  const auto asset = [&http](const char* path, std::string_view body, const char* type) {
    http.Get(path, [body, type](const httplib::Request&, httplib::Response& res) {
      res.set_content(body.data(), body.size(), type);
    });
  };
  asset("/", page_html(), "text/html; charset=utf-8");
  asset("/dashboard.js", page_js(), "text/javascript; charset=utf-8");
  asset("/dashboard.css", page_css(), "text/css; charset=utf-8");
  asset("/chart.js", chart_js(), "text/javascript; charset=utf-8");
  // Browsers ask for an icon on their own; "no content" keeps a 404 out of their console.
  http.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  // A served master's finished experiment (Feed::set_job_reports): its report page and data.
  const auto job_id = [](const httplib::Request& req) {
    std::uint64_t id = 0;
    const std::string& text = req.matches[1];
    std::from_chars(text.data(), text.data() + text.size(), id);  // \d{1,18}: always fits
    return id;
  };
  http.Get(R"(/jobs/(\d{1,18})/report\.html)", [this, job_id](const httplib::Request& req, httplib::Response& res) {
    const auto id = job_id(req);
    if (!feed_.job_report(id)) {
      res.status = 404;
      res.set_content("no report of experiment " + std::to_string(id) + "\n", "text/plain");
      return;
    }
    res.set_content(served_report_html("/jobs/" + std::to_string(id) + "/data.js"), "text/html; charset=utf-8");
  });
  http.Get(R"(/jobs/(\d{1,18})/data\.js)", [this, job_id](const httplib::Request& req, httplib::Response& res) {
    const auto view = feed_.job_report(job_id(req));
    if (!view) {
      res.status = 404;
      res.set_content("no report of this experiment\n", "text/plain");
      return;
    }
    res.set_content(report_data_js(*view), "text/javascript; charset=utf-8");
  });
  http.Get("/api/status", [this](const httplib::Request&, httplib::Response& res) {
    const auto v = feed_.view();
    res.set_content(*v.text, "application/json");
  });
  http.Get("/api/events", [this](const httplib::Request&, httplib::Response& res) {
    if (streams_.fetch_add(1) >= opt_.max_streams) {
      streams_.fetch_sub(1);
      res.status = 503;
      res.set_content("too many event streams open\n", "text/plain");
      return;
    }
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, sent = std::uint64_t{0}](std::size_t, httplib::DataSink& sink) mutable {
          const auto v = feed_.view();
          if (v.version != sent) {
            const std::string event = "data: " + *v.text + "\n\n";
            if (!sink.write(event.data(), event.size())) return false;
            sent = v.version;
          }
          if (!feed_.wait(sent, opt_.event_interval)) {  // the server stops
            sink.done();
            return true;
          }
          return sink.is_writable();
        },
        [this](bool) { streams_.fetch_sub(1); });
  });

  const auto& host = opt_.address.host;
  int port = opt_.address.port;
  if (port == 0) port = http.bind_to_any_port(host);
  else if (!http.bind_to_port(host, port)) port = -1;
  if (port <= 0)
    throw std::runtime_error("dashboard: cannot listen on " + to_string(opt_.address) +
                             " (in use, or not an address of this machine)");
  port_ = static_cast<std::uint16_t>(port);
  url_ = "http://" + to_string(Address{host, port_}) + "/" + (token_.empty() ? "" : "?token=" + token_);
  // The socket listens already (bound): the address file is written before the thread
  // starts, so that a file that cannot be written ends the constructor cleanly.
  if (!opt_.address_file.empty()) {
    const auto tmp = opt_.address_file + ".tmp";
    std::ofstream(tmp) << url_ << "\n";
    std::error_code ec;
    std::filesystem::rename(tmp, opt_.address_file, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error("--dashboard-file " + opt_.address_file + ": cannot write it");
    }
  }
  thread_ = std::thread([this] {
    http_->listen_after_bind();
    listening_done_ = true;
  });
}

DashboardServer::~DashboardServer() {
  feed_.close();
  // stop() acts only on a server that is listening: wait for listen_after_bind to start.
  while (!http_->is_running() && !listening_done_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace treefarm::dashboard
