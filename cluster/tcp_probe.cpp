#include "cluster/tcp_probe.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace troupe::cluster {

namespace {

using steady = std::chrono::steady_clock;

/// One address: connected (the descriptor, blocking again) or -1.
int connect_one(const addrinfo& a, steady::time_point deadline, std::string& why) {
  int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol);
  if (fd < 0) {
    why = std::strerror(errno);
    return -1;
  }
  if (::connect(fd, a.ai_addr, a.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      why = std::strerror(errno);
      ::close(fd);
      return -1;
    }
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
      if (left.count() <= 0) {
        why = "no answer (connection timed out)";
        ::close(fd);
        return -1;
      }
      pollfd p{fd, POLLOUT, 0};
      auto rc = ::poll(&p, 1, static_cast<int>(left.count()));
      if (rc < 0 && errno == EINTR) {
        continue;
      }
      if (rc <= 0) {
        why = rc == 0 ? "no answer (connection timed out)" : std::strerror(errno);
        ::close(fd);
        return -1;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        why = std::strerror(err);
        ::close(fd);
        return -1;
      }
      break;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

} // namespace

int connect_within(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
                   std::string& why) {
  auto deadline = steady::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (auto rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    why = std::string{"cannot resolve: "} + ::gai_strerror(rc);
    return -1;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard{found, &::freeaddrinfo};
  why = "no address";
  for (auto* a = found; a; a = a->ai_next) {
    if (int fd = connect_one(*a, deadline, why); fd >= 0) {
      return fd;
    }
  }
  return -1;
}

} // namespace troupe::cluster
