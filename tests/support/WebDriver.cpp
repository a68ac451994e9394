#include "tests/support/WebDriver.hpp"

#include <chrono>
#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include "tests/support/Shell.hpp"

namespace treefarm::test_support {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
std::string which(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const auto r = run_shell(std::string("command -v ") + name + " 2>/dev/null");
    if (r.exit_code == 0 && !r.output.empty()) return r.output.substr(0, r.output.find('\n'));
  }
  return {};
}

std::string read_all(const fs::path& file) {
  std::ifstream f(file);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

/// Waits for `pid` (a child of ours) up to `seconds`; true once it was reaped.
bool reap(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}
}  // namespace

std::string WebDriver::missing() {
  if (which({"chromedriver"}).empty())
    return "chromedriver is not installed (Debian chromium-driver; tools/bootstrap.sh installs it)";
  if (which({"chromium", "chromium-browser"}).empty())
    return "chromium is not installed (Debian chromium; tools/bootstrap.sh installs it)";
  return {};
}

WebDriver::WebDriver(const fs::path& dir, int width, int height)
    : dir_(dir), profile_(dir / "profile"), log_(dir / "chromedriver.log") {
  const auto driver = which({"chromedriver"}), browser = which({"chromium", "chromium-browser"});
  if (driver.empty() || browser.empty()) throw std::runtime_error(missing());
  fs::create_directories(profile_);
  const std::string home = (dir / "home").string();
  fs::create_directories(home);
  driver_ = ::fork();
  if (driver_ < 0) throw std::runtime_error("fork failed for chromedriver");
  if (driver_ == 0) {
    ::setpgid(0, 0);                      // chromedriver and the browser it starts: one group, ended together
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // and never outliving the test
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    // Chromium's crash handlers detach from the group; with its configuration and cache
    // under the test's directory their command lines name it, so browser_processes() sees them.
    ::setenv("XDG_CONFIG_HOME", home.c_str(), 1);
    ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
    ::execl(driver.c_str(), driver.c_str(), "--port=0", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(driver_, driver_);  // also here: whichever of the two runs first
  // "ChromeDriver was started successfully on port 39971."
  const std::regex started("started successfully on port ([0-9]+)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::smatch m;
  std::string text;
  while (true) {
    text = read_all(log_);
    if (std::regex_search(text, m, started)) break;
    if (::waitpid(driver_, nullptr, WNOHANG) == driver_) {
      driver_ = -1;
      throw std::runtime_error("chromedriver ended before it listened: " + text);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stop();
      throw std::runtime_error("chromedriver did not say its port within 30 s: " + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  port_ = std::stoi(m[1]);
  http_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
  http_->set_connection_timeout(10, 0);
  http_->set_read_timeout(90, 0);  // seconds: starting Chromium on a loaded machine
  const json args = json::array({"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                 "--no-first-run", "--disable-background-networking", "--disable-extensions",
                                 "--user-data-dir=" + profile_.string(),
                                 "--window-size=" + std::to_string(width) + "," + std::to_string(height)});
  const json caps = {{"capabilities",
                      {{"alwaysMatch",
                        {{"browserName", "chrome"},
                         {"goog:chromeOptions", {{"binary", browser}, {"args", args}}},
                         {"goog:loggingPrefs", {{"browser", "ALL"}}}}}}}};
  try {
    const auto v = command("POST", "/session", caps);
    session_ = v.at("sessionId").get<std::string>();
  } catch (...) {
    stop();
    throw;
  }
}

WebDriver::~WebDriver() { stop(); }

json WebDriver::command(const std::string& method, const std::string& path, const json& body) {
  httplib::Result r = method == "GET"      ? http_->Get(path)
                      : method == "DELETE" ? http_->Delete(path)
                                           : http_->Post(path, body.is_null() ? "{}" : body.dump(), "application/json");
  if (!r) throw std::runtime_error("WebDriver " + method + " " + path + ": no answer (" + httplib::to_string(r.error()) + ")");
  json answer;
  try {
    answer = json::parse(r->body);
  } catch (const json::exception&) {
    throw std::runtime_error("WebDriver " + method + " " + path + ": HTTP " + std::to_string(r->status) + ", not JSON: " +
                             r->body.substr(0, 500));
  }
  const json value = answer.contains("value") ? answer["value"] : json();
  if (r->status != 200 || (value.is_object() && value.contains("error")))
    throw std::runtime_error("WebDriver " + method + " " + path + ": HTTP " + std::to_string(r->status) + ": " +
                             (value.is_object() ? value.value("error", "") + ": " + value.value("message", "").substr(0, 800)
                                                : r->body.substr(0, 500)));
  return value;
}

void WebDriver::navigate(const std::string& url) { command("POST", "/session/" + session_ + "/url", {{"url", url}}); }

json WebDriver::execute(const std::string& script) {
  return command("POST", "/session/" + session_ + "/execute/sync", {{"script", script}, {"args", json::array()}});
}

json WebDriver::console() {
  // chromedriver's log endpoint (the goog:loggingPrefs capability turns it on).
  return command("POST", "/session/" + session_ + "/se/log", {{"type", "browser"}});
}

std::vector<pid_t> WebDriver::browser_processes() const {
  std::vector<pid_t> found;
  const std::string needle = dir_.string() + "/";
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_all(entry.path() / "cmdline");
    for (auto& c : cmdline)
      if (c == '\0') c = ' ';
    const pid_t pid = std::stoi(name);
    if (pid != ::getpid() && cmdline.find(needle) != std::string::npos) found.push_back(pid);
  }
  return found;
}

void WebDriver::stop() noexcept {
  if (!session_.empty() && http_) {
    try {
      command("DELETE", "/session/" + session_);  // closes the browser
    } catch (...) {
    }
    session_.clear();
  }
  if (driver_ > 0) {
    ::kill(-driver_, SIGTERM);
    if (!reap(driver_, 5)) {
      ::kill(-driver_, SIGKILL);
      reap(driver_, 5);
    }
    ::kill(-driver_, SIGKILL);  // whatever of the browser is left in the group
    driver_ = -1;
  }
  // Chromium's detached helpers (crash handlers) end once the browser has gone; wait a
  // little for them, then end what is left.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!browser_processes().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (const pid_t pid : browser_processes())
    if (alive(pid)) ::kill(pid, SIGKILL);
}

}  // namespace treefarm::test_support
