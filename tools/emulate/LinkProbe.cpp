#include "tools/emulate/LinkProbe.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <future>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace treefarm::emulate {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int stall_seconds = 15;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("link probe: " + what + ": " + std::strerror(errno));
}

/// Moves the calling thread (only it) into the named network namespace.
void enter_netns(const std::string& name) {
  const std::string path = "/run/netns/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open " + path);
  const int r = setns(fd, CLONE_NEWNET);
  const int saved = errno;
  close(fd);
  errno = saved;
  if (r != 0) fail("setns into " + name);
}

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {
    if (fd_ < 0) fail("socket");
  }
  ~Socket() { close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }
  void timeouts() const {
    timeval tv{stall_seconds, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }

 private:
  int fd_;
};

sockaddr_in inet(const std::string& address, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    throw std::invalid_argument("link probe: not an IPv4 address: " + address);
  return a;
}

double receive(const std::string& netns, const std::string& address, std::uint64_t bytes,
               std::promise<std::uint16_t>& port) {
  enter_netns(netns);
  Socket listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto a = inet(address, 0);
  if (bind(listener.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail("bind " + address);
  if (listen(listener.fd(), 1) != 0) fail("listen");
  socklen_t len = sizeof a;
  getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&a), &len);
  port.set_value(ntohs(a.sin_port));

  pollfd p{listener.fd(), POLLIN, 0};
  if (poll(&p, 1, stall_seconds * 1000) != 1) throw std::runtime_error("link probe: the sender never connected");
  Socket conn(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
  conn.timeouts();
  std::vector<char> buf(256 * 1024);
  std::uint64_t received = 0, mark_bytes = 0;
  Clock::time_point mark{};
  const std::uint64_t warmup = bytes / 10;
  while (received < bytes) {
    const ssize_t n = recv(conn.fd(), buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("receive (after " + std::to_string(received) + " bytes)");
    if (n == 0) throw std::runtime_error("link probe: connection closed after " + std::to_string(received) + " bytes");
    received += static_cast<std::uint64_t>(n);
    if (mark_bytes == 0 && received >= warmup) {
      mark = Clock::now();
      mark_bytes = received;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - mark).count();
  if (received <= mark_bytes || seconds <= 0) throw std::runtime_error("link probe: too few bytes to time");
  return static_cast<double>(received - mark_bytes) / seconds;
}

void send_all(const std::string& netns, const std::string& address, std::uint64_t bytes, std::future<std::uint16_t> port) {
  enter_netns(netns);
  const auto a = inet(address, port.get());
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  s.timeouts();
  if (connect(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) fail("connect to " + address);
  std::vector<char> buf(256 * 1024, 'x');
  std::uint64_t sent = 0;
  while (sent < bytes) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), bytes - sent));
    const ssize_t n = send(s.fd(), buf.data(), chunk, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("send (after " + std::to_string(sent) + " bytes)");
    sent += static_cast<std::uint64_t>(n);
  }
  shutdown(s.fd(), SHUT_WR);
  char c;
  while (recv(s.fd(), &c, 1, 0) > 0) {
  }
}
}  // namespace

double measure_link(const Platform& platform, std::size_t child_node, std::uint64_t bytes, Direction direction) {
  if (child_node >= platform.size() || !platform.parent(child_node))
    throw std::invalid_argument("measure_link: node " + std::to_string(child_node) +
                                " is not a child node of the platform (1.." + std::to_string(platform.size() - 1) + ")");
  if (bytes < 64 * 1024) throw std::invalid_argument("measure_link: send at least 64 KiB, got " + std::to_string(bytes));
  const std::size_t parent = *platform.parent(child_node);
  const bool down = direction == Direction::down;
  const std::string& rx_ns = platform.netns(down ? child_node : parent);
  const std::string& tx_ns = platform.netns(down ? parent : child_node);
  const std::string& rx_addr = down ? platform.address(child_node) : platform.parent_address(child_node);

  std::promise<std::uint16_t> port;
  std::exception_ptr rx_error, tx_error;
  double rate = 0;
  std::thread rx([&] {
    try {
      rate = receive(rx_ns, rx_addr, bytes, port);
    } catch (...) {
      rx_error = std::current_exception();
      try {
        port.set_exception(std::current_exception());
      } catch (const std::future_error&) {  // the port was already published
      }
    }
  });
  std::thread tx([&, fut = port.get_future()]() mutable {
    try {
      send_all(tx_ns, rx_addr, bytes, std::move(fut));
    } catch (...) {
      tx_error = std::current_exception();
    }
  });
  tx.join();
  rx.join();
  // The sender's error names the first failure (a receiver failure reaches it as well).
  if (tx_error) std::rethrow_exception(tx_error);
  if (rx_error) std::rethrow_exception(rx_error);
  return rate;
}

}  // namespace treefarm::emulate
