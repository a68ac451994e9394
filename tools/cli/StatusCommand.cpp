// treefarm status (docs/serve.md "Status", docs/commands.md).
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "tools/ServeClient.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct StatusCli {
  tools::ServeEndpoint to;
  bool json = false;
  bool watch = false;
  double interval = 1.0;
  double timeout = 10;
};

std::string text_of(const nlohmann::json& st) {
  std::ostringstream out;
  char line[256];
  out << "served by '" << st.value("serving", "?") << "'\n";
  const auto& running = st.contains("running") ? st["running"] : nlohmann::json();
  // The tree: parent before child, indented by depth (the last run's view of it).
  const auto tree = st.value("tree", nlohmann::json::array());
  std::map<std::string, std::vector<const nlohmann::json*>> children;
  const nlohmann::json* root = nullptr;
  for (const auto& n : tree) {
    const auto parent = n.value("parent", "");
    if (parent.empty()) root = &n;
    else children[parent].push_back(&n);
  }
  const double elapsed = running.is_object() ? running.value("elapsed", 0.0) : 0.0;
  const bool is_running = running.is_object();
  out << "tree" << (is_running ? " (running experiment)" : " (as of the last experiment)") << ":\n";
  std::snprintf(line, sizeof line, "  %-24s %6s %5s %6s %7s %10s %10s  %s\n", "node", "cores", "busy", "load",
                "queued", "tasks", "tasks/s", "state");
  out << line;
  std::function<void(const nlohmann::json&, int)> show = [&](const nlohmann::json& n, int depth) {
    const auto name = n.value("name", "?");
    const auto done = n.value("done", 0ull);
    // The node's own report (busy cores, machine load, tasks held): only while a run is on.
    const bool reported = is_running && n.contains("busy_cores");
    const std::string busy = reported ? std::to_string(n.value("busy_cores", 0u)) : "-";
    const std::string queued = reported ? std::to_string(n.value("queued", 0u)) : "-";
    char load[32] = "-";
    if (reported && n.contains("load1") && n["load1"].is_number()) std::snprintf(load, sizeof load, "%.2f", n["load1"].get<double>());
    std::snprintf(line, sizeof line, "  %-24s %6u %5s %6s %7s %10llu %10.2f  %s\n",
                  (std::string(static_cast<std::size_t>(2 * depth), ' ') + name).c_str(), n.value("cores", 0u),
                  busy.c_str(), load, queued.c_str(), done, elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0,
                  is_running ? (done > 0 ? "computing" : "joined") : "idle");
    out << line;
    for (const auto* c : children[name]) show(*c, depth + 1);
  };
  if (root) show(*root, 0);
  else if (tree.empty()) out << "  (no experiment has run yet)\n";
  const auto waiting = st.value("waiting", std::vector<std::string>{});
  if (!waiting.empty()) {
    out << "waiting for the next experiment (connected):";
    for (const auto& w : waiting) out << " " << w;
    out << "\n";
  }
  if (is_running) {
    std::snprintf(line, sizeof line, "running: experiment %llu (%s%s%s), %.1f s\n",
                  running.value("id", 0ull), running.value("name", "?").c_str(),
                  running.value("policy", "").empty() ? "" : ", policy ", running.value("policy", "").c_str(), elapsed);
    out << line;
    std::snprintf(line, sizeof line, "  %-14s %16s %12s %12s\n", "application", "done/tasks", "tasks/s", "predicted");
    out << line;
    for (const auto& a : running.value("apps", nlohmann::json::array())) {
      const std::string done = std::to_string(a.value("done", 0ull)) + "/" + std::to_string(a.value("tasks", 0ull));
      std::snprintf(line, sizeof line, "  %-14s %16s %12.3f ", a.value("name", "?").c_str(), done.c_str(), a.value("throughput", 0.0));
      out << line;
      if (a.contains("predicted") && a["predicted"].is_number()) {
        std::snprintf(line, sizeof line, "%12.3f\n", a["predicted"].get<double>());
        out << line;
      } else {
        out << "           -\n";
      }
    }
    if (running.contains("eta") && running["eta"].is_object())  // the model's predicted completion
      out << "  " << running["eta"].value("text", std::string()) << "\n";
  } else {
    out << "running: nothing\n";
  }
  const auto queue = st.value("queue", nlohmann::json::array());
  out << "queue: " << (queue.empty() ? "empty" : std::to_string(queue.size()) + " experiment(s)") << "\n";
  for (const auto& q : queue) {
    std::snprintf(line, sizeof line, "  %llu. experiment %llu (%s), waiting %.0f s\n", q.value("position", 0ull),
                  q.value("id", 0ull), q.value("name", "?").c_str(), q.value("waiting_seconds", 0.0));
    out << line;
  }
  for (const auto& f : st.value("finished", nlohmann::json::array())) {
    std::snprintf(line, sizeof line, "finished: experiment %llu (%s), exit code %d\n", f.value("id", 0ull),
                  f.value("name", "?").c_str(), f.value("exit_code", -1));
    out << line;
  }
  return out.str();
}

int run_status(const StatusCli& o) {
  tools::ServeClient client(o.to);
  const bool tty = ::isatty(1) != 0;
  for (;;) {
    const auto st = client.status(o.timeout);
    if (o.json) {
      auto shown = st;
      shown.erase("type");
      std::cout << shown.dump() << std::endl;
    } else {
      if (o.watch && tty) std::cout << "\033[H\033[2J";  // refresh in place
      std::cout << text_of(st) << std::flush;
      if (o.watch && !tty) std::cout << "\n";
    }
    if (!o.watch) return 0;
    for (double slept = 0; slept < o.interval; slept += 0.1) {
      if (interrupted()) throw cli_support::Interrupted("interrupted; stopped watching");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}
}  // namespace

void add_status_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<StatusCli>();
  auto* cmd = app.add_subcommand("status",
                                 "A served tree's state: its nodes (cores, tasks done, state), the workers waiting, the running\n"
                                 "experiment's progress per application beside its prediction, the queue.\n"
                                 "Example: treefarm status --to tcp://127.0.0.1:5600 --watch");
  add_serve_endpoint_options(*cmd, o->to, true);
  cmd->add_flag("--json", o->json, "One JSON object (a line per refresh with --watch)");
  cmd->add_flag("--watch", o->watch, "Refresh in place until interrupted");
  cmd->add_option("--interval", o->interval, "seconds between refreshes with --watch")->capture_default_str()->check(treefarm::cli_support::positive_number());
  cmd->add_option("--timeout", o->timeout, "seconds to wait for the master's answer")->capture_default_str()->check(treefarm::cli_support::positive_number());
  out.push_back({cmd, [o] { return run_status(*o); }});
}

}  // namespace treefarm::cli
