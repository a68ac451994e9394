#include "tools/bench/TransportCeiling.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "runtime/process/Spawn.hpp"

namespace treefarm::bench {

namespace {

/// Tasks in a message of `frames` (frame_per_task: one per frame; else the one frame's bytes over `bytes_per_task`).
std::uint64_t tasks_in(const std::vector<zmq::message_t>& frames, std::size_t first, std::size_t bytes_per_task, bool frame_per_task) {
  if (frame_per_task) return frames.size() - first;
  return frames.size() == first + 1 ? frames[first].size() / bytes_per_task : 0;
}

void tune(zmq::socket_t& s) {
  s.set(zmq::sockopt::sndhwm, 0);
  s.set(zmq::sockopt::rcvhwm, 0);
  s.set(zmq::sockopt::linger, 0);
}

/// A worker process: answers every message of k tasks' inputs with one of k results.
int worker_main(int endpoint_fd, const TransportCeilingOptions& o) {
  int code = 0;
  try {
    std::string endpoint(4096, '\0');
    const auto n = ::read(endpoint_fd, endpoint.data(), endpoint.size());
    if (n <= 0) return 3;
    endpoint.resize(static_cast<std::size_t>(n));
    zmq::context_t ctx(1);
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    tune(s);
    s.set(zmq::sockopt::rcvtimeo, 60000);
    s.connect(endpoint);
    s.send(zmq::str_buffer("hi"));
    std::vector<std::byte> result(o.result_bytes, std::byte{7});  // frame_per_task: sent without a copy
    std::vector<zmq::message_t> in;
    for (;;) {
      in.clear();
      if (!zmq::recv_multipart(s, std::back_inserter(in))) throw std::runtime_error("no message for 60 s");
      if (in.size() == 1 && in[0].size() == 0) break;  // the end
      const auto k = tasks_in(in, 0, o.input_bytes, o.frame_per_task);
      if (!o.frame_per_task) {
        zmq::message_t r(k * o.result_bytes);
        std::memset(r.data(), 7, r.size());  // the worker writes its results, as a kernel would
        s.send(r, zmq::send_flags::none);
        continue;
      }
      for (std::uint64_t i = 0; i < k; ++i) {
        zmq::message_t r(result.data(), result.size(), nullptr);
        s.send(r, i + 1 < k ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
    }
  } catch (...) {
    code = 2;
  }
  return code;
}

void end_all(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) ::kill(p, SIGKILL);
  for (pid_t p : pids) process::wait(p);
}

}  // namespace

double transport_ceiling(const TransportCeilingOptions& o) {
  if (o.workers == 0 || o.buffer == 0 || o.input_bytes == 0 || o.result_bytes == 0 || o.tasks == 0)
    throw std::invalid_argument("transport ceiling: workers, buffer, input and result bytes and tasks must be at least 1");
  // The workers are forked (process::spawn_function) before this process has a ZeroMQ
  // context: a child inherits no I/O thread.
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (std::uint32_t w = 0; w < o.workers; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) {
      for (int fd : pipes) ::close(fd);
      end_all(pids);
      throw std::runtime_error("transport ceiling: pipe failed");
    }
    process::ChildSetup setup;
    setup.stdin_null = true;
    setup.close_fds = pipes;
    setup.close_fds.push_back(fds[1]);
    setup.parent_death_signal = SIGKILL;
    pid_t pid = -1;
    try {
      pid = process::spawn_function([&o, fd = fds[0]] { return worker_main(fd, o); }, setup, "a transport ceiling worker");
    } catch (...) {
      ::close(fds[0]);
      ::close(fds[1]);
      for (int fd : pipes) ::close(fd);
      end_all(pids);
      throw;
    }
    ::close(fds[0]);
    pids.push_back(pid);
    pipes.push_back(fds[1]);
  }
  const auto ipc_path = std::filesystem::temp_directory_path() / ("treefarm-ceiling-" + std::to_string(::getpid()));
  double rate = 0;
  try {
    zmq::context_t ctx(1);
    zmq::socket_t router(ctx, zmq::socket_type::router);
    tune(router);
    router.set(zmq::sockopt::rcvtimeo, 30000);
    router.bind(o.ipc ? "ipc://" + ipc_path.string() : std::string("tcp://127.0.0.1:*"));
    const std::string ep = router.get(zmq::sockopt::last_endpoint);
    for (int& fd : pipes) {
      const bool ok = ::write(fd, ep.data(), ep.size()) == static_cast<ssize_t>(ep.size());
      ::close(fd);
      fd = -1;
      if (!ok) throw std::runtime_error("transport ceiling: pipe write failed");
    }
    std::vector<zmq::message_t> ids, msg;
    while (ids.size() < o.workers) {
      msg.clear();
      if (!zmq::recv_multipart(router, std::back_inserter(msg)) || msg.size() != 2)
        throw std::runtime_error("transport ceiling: a worker did not join within 30 s");
      ids.push_back(std::move(msg[0]));
    }
    std::vector<std::byte> input(o.input_bytes, std::byte{3});  // frame_per_task: sent without a copy, never freed by ZeroMQ
    const std::size_t per_batch = std::max<std::size_t>(1, o.batch_bytes / (o.input_bytes + 64));
    std::uint64_t sent = 0, done = 0;
    std::vector<std::uint64_t> outstanding(o.workers, 0);
    const auto send_to = [&](std::size_t w) {
      while (outstanding[w] < o.buffer && sent < o.tasks) {
        const std::uint64_t k = std::min<std::uint64_t>({per_batch, o.buffer - outstanding[w], o.tasks - sent});
        router.send(zmq::buffer(ids[w].data(), ids[w].size()), zmq::send_flags::sndmore);
        if (o.frame_per_task) {
          for (std::uint64_t i = 0; i < k; ++i) {
            zmq::message_t m(input.data(), input.size(), nullptr);
            router.send(m, i + 1 < k ? zmq::send_flags::sndmore : zmq::send_flags::none);
          }
        } else {
          zmq::message_t m(k * input.size());  // the inputs copied into one batch frame, as the tree's master does
          for (std::uint64_t i = 0; i < k; ++i) std::memcpy(static_cast<std::byte*>(m.data()) + i * input.size(), input.data(), input.size());
          router.send(m, zmq::send_flags::none);
        }
        outstanding[w] += k;
        sent += k;
      }
    };
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t w = 0; w < o.workers; ++w) send_to(w);
    while (done < o.tasks) {
      msg.clear();
      if (!zmq::recv_multipart(router, std::back_inserter(msg)) || msg.size() < 2)
        throw std::runtime_error("transport ceiling: no result for 30 s");
      std::size_t w = 0;
      while (w < ids.size() && !(ids[w] == msg[0])) ++w;
      if (w == ids.size()) throw std::runtime_error("transport ceiling: a message from an unknown peer");
      const std::uint64_t k = tasks_in(msg, 1, o.result_bytes, o.frame_per_task);
      if (k == 0 || k > outstanding[w]) throw std::runtime_error("transport ceiling: a worker answered tasks it was not sent");
      outstanding[w] -= k;
      done += k;
      send_to(w);
    }
    rate = static_cast<double>(o.tasks) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto& id : ids) {
      router.send(zmq::buffer(id.data(), id.size()), zmq::send_flags::sndmore);
      router.send(zmq::message_t(), zmq::send_flags::none);
    }
    int failed = 0;
    for (pid_t p : pids)
      if (process::exit_code(process::wait(p)) != 0) ++failed;
    pids.clear();
    if (failed != 0) throw std::runtime_error("transport ceiling: a worker process failed");
  } catch (...) {
    for (int fd : pipes)
      if (fd >= 0) ::close(fd);
    end_all(pids);
    std::error_code ec;
    std::filesystem::remove(ipc_path, ec);
    throw;
  }
  std::error_code ec;
  std::filesystem::remove(ipc_path, ec);
  return rate;
}

}  // namespace treefarm::bench
