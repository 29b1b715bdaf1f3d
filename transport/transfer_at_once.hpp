#pragma once

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <limits>

namespace troupe::transport {

/// A completion condition for asio's composed reads and writes (`net::write`, `async_read`,
/// `async_write`): all of the buffers, each system call offered as much of them as is left.
/// asio's own `transfer_all` offers at most 64 KB per call (`default_max_transfer_size`), so a
/// 100 KB prompt took two `recvmsg` on the way in and two `sendmsg` on the way to the worker
/// where the socket had it all, or room for it all, at once.
struct transfer_at_once {
  std::size_t operator()(const boost::system::error_code& ec, std::size_t) const noexcept {
    return ec ? 0 : std::numeric_limits<std::size_t>::max();
  }
};

} // namespace troupe::transport
