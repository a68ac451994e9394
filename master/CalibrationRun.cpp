#include "master/CalibrationRun.hpp"

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "runtime/node/ExitCode.hpp"
#include "runtime/zmq/ZmqNode.hpp"

namespace treefarm::master {

CalibrationRun::CalibrationRun(const model::Experiment& ex, const MasterOptions& options, std::size_t master_cores)
    : ex_(ex), options_(options) {
  calibration_.experiment = ex.path;
  calibration_.apps = model::app_signatures(ex);
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
    const auto& n = ex.nodes[i];
    calibration_.nodes[n.name].cores = n.cores;
    calibration_.nodes[n.name].parent = n.parent.value_or("");
    if (i > 0) ++expected_;                         // the link from its parent
    if (ex.children(i).size() >= 2) ++expected_;    // its aggregate output
    expect_kernels(i == 0 ? static_cast<std::uint32_t>(master_cores) : n.cores);
  }
  spdlog::info("master: calibration run, {} measurements expected{}", expected_,
               options.live_tree ? " from the master; more for each node of the live tree that joins" : "");
}

void CalibrationRun::expect_kernels(std::uint32_t cores) {
  for (const auto& app : ex_.apps)
    if (cores > 0 && app.cores_per_task <= cores) ++expected_;
}

// Complete once every node that joined is measured and the nodes expected have joined, or
// the wait for them is over.
bool CalibrationRun::complete(double now) const {
  return got_ >= expected_ &&
         (!options_.live_tree || live_joined_ >= options_.wait_for_nodes.value_or(0) || now >= options_.wait_timeout);
}

void CalibrationRun::install(node::RootSetup& root, zmq_node::ZmqNode*& node) {
  root.welcome.calibrate_reps = std::max<std::uint32_t>(1, options_.calibrate_reps);
  std::uint64_t probe = 1 << 20;
  for (const auto& app : ex_.apps) probe = std::max<std::uint64_t>(probe, app.input_bytes());
  root.welcome.probe_bytes = probe;
  root.wait_for_nodes = 0;
  // The cores each node advertises when it joins (what it really has). On a live tree each
  // node that joins adds its link, its kernels and, at its parent's second child, the
  // parent's aggregate output.
  root.on_joined = [this, listed = root.on_joined](const net::msg::NodeJoined& j) {
    listed(j);
    if (auto it = calibration_.nodes.find(j.name); it != calibration_.nodes.end()) {
      it->second.cores = j.cores;
      return;
    }
    if (!options_.live_tree) return;
    auto& nc = calibration_.nodes[j.name];
    nc.cores = j.cores;
    nc.parent = j.parent;
    ++expected_;
    expect_kernels(j.cores);
    if (++live_children_[j.parent] == 2) ++expected_;
    ++live_joined_;
  };
  root.on_measure = [this, &node](const net::msg::Measure& m) {
    auto it = calibration_.nodes.find(m.node);
    if (it == calibration_.nodes.end()) {
      spdlog::warn("master: measurement for unknown node '{}' ignored", m.node);
      return;
    }
    using What = net::msg::Measure::What;
    if (m.what == What::fallbacks) return;
    if (m.what == What::output_bytes) {  // not a measurement of its own: it comes with task_seconds
      it->second.output_bytes[m.app] = m.value;
      return;
    }
    auto& nc = it->second;
    if (m.what == What::task_seconds) {
      nc.task_seconds[m.app] = m.value;
    } else if (m.what == What::link_round_trip) {
      nc.link_round_trip = m.value;
    } else if (m.value > 0) {
      (m.what == What::link_bandwidth       ? nc.link_bandwidth
       : m.what == What::link_bandwidth_min ? nc.link_bandwidth_min
       : m.what == What::link_bandwidth_max ? nc.link_bandwidth_max
                                            : nc.out_bandwidth) = m.value;
    }
    // The spread and round trip of a link come before its median (LinkProber): only the
    // median counts the link as measured.
    if (m.what == What::link_round_trip || m.what == What::link_bandwidth_min || m.what == What::link_bandwidth_max)
      return;
    // A node measures its aggregate output again when another child joins: count keys once.
    measured_.insert(m.node + "/" + m.app + "/" + std::to_string(static_cast<int>(m.what)));
    got_ = measured_.size();
    if (complete(last_tick_) && node) node->finish();
  };
  root.on_tick = [this, &node](double now) {
    last_tick_ = now;
    if (options_.live_tree && complete(now) && node) {
      spdlog::info("master: calibration of the live tree: {} nodes joined and measured", live_joined_);
      node->finish();
      return;
    }
    if (options_.progress)
      std::fprintf(stderr, "[%d s] calibration: %zu/%zu measurements\n", static_cast<int>(now), got_, expected_);
    if (now > options_.calibrate_timeout && node) {
      spdlog::error("master: calibration incomplete after {} s", options_.calibrate_timeout);
      node->stop();
    }
  };
}

int CalibrationRun::finish(int rc) const {
  // Interrupted or failed: no file, whatever was measured (a file must be whole).
  if (rc != 0 || got_ < expected_) {
    spdlog::error("master: calibration {} after {} of {} measurements; no calibration written",
                  rc == node::exit_interrupted ? "interrupted" : "failed", got_, expected_);
    return rc != 0 ? rc : 1;
  }
  model::save_calibration(calibration_, options_.calibrate_out);
  if (!options_.table) return rc;
  std::printf("calibration written to %s\n", options_.calibrate_out.c_str());
  for (const auto& [name, nc] : calibration_.nodes) {
    std::printf("  %-12s", name.c_str());
    for (const auto& [app, s] : nc.task_seconds) {
      std::printf("  %s %.6f s/task", app.c_str(), s);
      if (const auto o = nc.output_bytes.find(app); o != nc.output_bytes.end())
        std::printf(" (%.0f bytes of output)", o->second);
    }
    if (nc.link_bandwidth) {
      std::printf("  link %.3g bytes/s", *nc.link_bandwidth);
      if (nc.link_bandwidth_min && nc.link_bandwidth_max)
        std::printf(" (rounds %.3g to %.3g)", *nc.link_bandwidth_min, *nc.link_bandwidth_max);
    }
    if (nc.link_round_trip) std::printf("  rtt %.3g s", *nc.link_round_trip);
    else if (name != ex_.nodes[0].name) std::printf("  link: faster than the probe resolves (loopback)");
    if (nc.out_bandwidth) std::printf("  out (all children) %.3g bytes/s", *nc.out_bandwidth);
    std::printf("\n");
  }
  return rc;
}

}  // namespace treefarm::master
