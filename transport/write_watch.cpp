#include "transport/write_watch.hpp"

#ifdef __linux__
#include <linux/sockios.h>
#include <sys/ioctl.h>
#endif

namespace troupe::transport {

std::size_t unacknowledged_bytes(tcp::socket& socket) {
#ifdef SIOCOUTQ
  int n = 0;
  if (::ioctl(socket.native_handle(), SIOCOUTQ, &n) == 0 && n > 0) {
    return static_cast<std::size_t>(n);
  }
#endif
  (void)socket;
  return 0;
}

} // namespace troupe::transport
