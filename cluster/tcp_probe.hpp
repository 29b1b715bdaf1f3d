#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace troupe::cluster {

/// A TCP connection to `host:port` made within `timeout` (every address the name resolves to
/// is tried in turn, within what is left of it), or -1 with `why` saying what failed. The
/// connect is non-blocking with a poll, so an address that drops packets (no SYN-ACK, no
/// reset) costs `timeout`, not the kernel's SYN retries (about two minutes). Name resolution
/// is the system's (blocking): call this off the actor and io threads.
int connect_within(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
                   std::string& why);

} // namespace troupe::cluster
