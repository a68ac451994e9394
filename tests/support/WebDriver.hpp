#pragma once
// A real browser for tests: headless Chromium driven through chromedriver (Debian
// `chromium`, `chromium-driver`) over the W3C WebDriver protocol, HTTP/JSON on a loopback
// port (https://www.w3.org/TR/webdriver2/), spoken with cpp-httplib, the HTTP library the
// dashboard already links.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

namespace httplib {
class Client;
}

namespace treefarm::test_support {

/// One chromedriver process and one headless Chromium session with a fresh profile
/// (`--user-data-dir`), configuration and cache in a directory of its own. The destructor
/// ends the session, chromedriver and every process still naming that directory
/// (Chromium's helpers).
class WebDriver {
 public:
  /// Why a browser cannot be driven here ("chromedriver is not installed ..."), or empty.
  static std::string missing();

  /// Starts chromedriver on a free loopback port (its log: `dir`/chromedriver.log) and a
  /// session of a `width` × `height` pixels window that records every console message.
  /// `dir` is the browser's own (no other process of the test may name it).
  /// Throws std::runtime_error naming what failed.
  explicit WebDriver(const std::filesystem::path& dir, int width = 1280, int height = 1000);
  ~WebDriver();
  WebDriver(const WebDriver&) = delete;
  WebDriver& operator=(const WebDriver&) = delete;

  /// Loads `url` and returns once the page's load event fired.
  void navigate(const std::string& url);
  /// Runs `script` as the body of a function in the page and returns what it returned.
  nlohmann::json execute(const std::string& script);
  /// The console's messages since the last call (uncaught errors, failed loads,
  /// console.*), each {"level": "SEVERE"|"WARNING"|"INFO"|..., "message", "source"}.
  nlohmann::json console();

  /// Processes whose command line names this session's directory (the browser's).
  std::vector<pid_t> browser_processes() const;

 private:
  nlohmann::json command(const std::string& method, const std::string& path, const nlohmann::json& body = {});
  void stop() noexcept;

  std::filesystem::path dir_, profile_, log_;
  pid_t driver_ = -1;
  int port_ = 0;
  std::string session_;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace treefarm::test_support
