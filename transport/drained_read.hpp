#pragma once

// A socket read that tells the reactor when it emptied the socket, so that the next read waits
// for readiness instead of trying first.
//
// asio's reactor (epoll, edge-triggered) starts every read with a "speculative" `recv`, unless
// the last one on that socket ended the stream. On a keep-alive connection that try nearly always
// fails: a client sends its next request only after our answer, a worker answers only after our
// request. strace counted one EAGAIN `recvfrom` per proxied request (a third of the gateway's
// reads). nginx skips it: after a read that did not fill its buffer it marks the socket not
// ready, unless epoll reported the peer's end of the stream (EPOLLRDHUP), whose FIN may sit behind
// the bytes just read and raise no further event. This op does the same within asio's own
// bookkeeping: the socket is registered for EPOLLRDHUP too (once), and a read that returns fewer
// bytes than it had room for, on a socket whose last readiness event had neither EPOLLRDHUP nor
// EPOLLHUP nor EPOLLERR, reports "done and exhausted", which makes the reactor skip the next
// read's first try until epoll reports the socket again (asio's rule for a read that hit the end
// of the stream). Anything that arrives after such a read (bytes, FIN, RST) raises an event of its
// own, and an event that finds no read waiting re-enables the try, so nothing is left unread and
// no end of stream unseen (tests/transport/drained_read_test.cpp covers each case).
//
// This reaches into asio's detail layer (the reactor op, the reactor's registration of the
// socket, its last event mask), which is not a stable interface: it is compiled for the Boost
// release it was written against (Debian 12's 1.74) with the epoll reactor, and used only for
// sockets on an io_context's own executor; the handler is called directly by the reactor's
// completion, as that executor would call it. Anything else (a strand: the gateway's sockets
// when it runs several io threads) takes the plain `async_read_some`.

#include "transport/dispatch_inline.hpp"
#include "transport/http_types.hpp"

#include <boost/version.hpp>
#include <cstddef>
#include <type_traits>
#include <utility>

#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING)
#define TROUPE_DRAINED_READ 1
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#include <boost/asio/detail/thread_context.hpp>
#include <boost/asio/detail/thread_info_base.hpp>
#include <cstdint>
#include <sys/epoll.h>
#endif

namespace troupe::transport {

#ifdef TROUPE_DRAINED_READ
namespace detail {

namespace ad = boost::asio::detail;

// asio keeps what this needs private. An explicit instantiation may name private members
// ([temp.explicit]/12), and hands out pointers to them through a friend function.
template <class Tag, typename Tag::type Member> struct expose {
  friend typename Tag::type member(Tag) { return Member; }
};
/// The events a descriptor is registered for with epoll.
struct registered_events_tag {
  using type = std::uint32_t ad::epoll_reactor::descriptor_state::*;
  friend type member(registered_events_tag);
};
/// Its lock (asio changes the registration under it too).
struct descriptor_mutex_tag {
  using type = ad::conditionally_enabled_mutex ad::epoll_reactor::descriptor_state::*;
  friend type member(descriptor_mutex_tag);
};
/// The reactor a descriptor is registered with.
struct descriptor_reactor_tag {
  using type = ad::epoll_reactor* ad::epoll_reactor::descriptor_state::*;
  friend type member(descriptor_reactor_tag);
};
/// The reactor's epoll descriptor.
struct epoll_fd_tag {
  using type = int ad::epoll_reactor::*;
  friend type member(epoll_fd_tag);
};
/// The events of the descriptor's last readiness report (asio keeps them here for perform_io).
struct ready_events_tag {
  using type = unsigned int ad::scheduler_operation::*;
  friend type member(ready_events_tag);
};
template struct expose<registered_events_tag,
                       &ad::epoll_reactor::descriptor_state::registered_events_>;
template struct expose<descriptor_mutex_tag, &ad::epoll_reactor::descriptor_state::mutex_>;
template struct expose<descriptor_reactor_tag, &ad::epoll_reactor::descriptor_state::reactor_>;
template struct expose<epoll_fd_tag, &ad::epoll_reactor::epoll_fd_>;
template struct expose<ready_events_tag, &ad::scheduler_operation::task_result_>;

/// The socket's implementation (descriptor, state, reactor registration), which basic_socket
/// keeps protected.
struct socket_access : tcp::socket {
  static auto& implementation(tcp::socket& s) {
    return (s.*&socket_access::impl_).get_implementation();
  }
};

/// The events of `d`'s last readiness report. (`descriptor_state` derives from the operation
/// privately; a C-style cast may convert to a private base.)
inline unsigned ready_events(ad::epoll_reactor::descriptor_state* d) {
  return ((ad::scheduler_operation*)d)->*member(ready_events_tag{}); // NOLINT
}

/// True when `d` is registered for EPOLLRDHUP, registering it if need be (once per socket);
/// false when that failed. Every later change asio makes to the registration keeps it (asio
/// adds to `registered_events_`).
inline bool watch_peer_close(ad::epoll_reactor& reactor, int fd,
                             ad::epoll_reactor::descriptor_state* d) {
  ad::conditionally_enabled_mutex::scoped_lock lock(d->*member(descriptor_mutex_tag{}));
  auto& registered = d->*member(registered_events_tag{});
  if ((registered & EPOLLRDHUP) != 0) {
    return true;
  }
  epoll_event ev{};
  ev.events = registered | EPOLLRDHUP;
  ev.data.ptr = d;
  if (::epoll_ctl(reactor.*member(epoll_fd_tag{}), EPOLL_CTL_MOD, fd, &ev) != 0) {
    return false;
  }
  registered = ev.events;
  return true;
}

template <class Handler> class drained_read_op : public ad::reactor_op {
public:
  /// A new op in memory of the io thread's recycling allocator (as asio's own ops).
  static drained_read_op* make(int fd, ad::epoll_reactor::descriptor_state* d,
                               net::mutable_buffer buf, Handler&& h) {
    void* mem = ad::thread_info_base::allocate(ad::thread_context::thread_call_stack::top(),
                                               sizeof(drained_read_op));
    return new (mem) drained_read_op(fd, d, buf, std::move(h));
  }

private:
  drained_read_op(int fd, ad::epoll_reactor::descriptor_state* d, net::mutable_buffer buf,
                  Handler&& h)
      : reactor_op(boost::system::error_code{}, &drained_read_op::do_perform,
                   &drained_read_op::do_complete),
        fd_(fd), descriptor_(d), buf_(buf), handler_(std::move(h)) {}

  static status do_perform(reactor_op* base) {
    auto* o = static_cast<drained_read_op*>(base);
    if (!ad::socket_ops::non_blocking_recv1(o->fd_, o->buf_.data(), o->buf_.size(), 0, true, o->ec_,
                                            o->bytes_transferred_)) {
      return not_done; // nothing to read yet: wait for the socket to become readable
    }
    if (o->ec_ == net::error::eof) {
      return done_and_exhausted; // asio's own rule
    }
    // Fewer bytes than there was room for: the socket held no more, unless the peer's FIN or
    // RST came with them (then the next read must try at once, to see it).
    bool emptied = !o->ec_ && o->bytes_transferred_ < o->buf_.size() &&
                   (ready_events(o->descriptor_) & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0;
    return emptied ? done_and_exhausted : done;
  }

  static void do_complete(void* owner, ad::operation* base, const boost::system::error_code&,
                          std::size_t) {
    auto* o = static_cast<drained_read_op*>(base);
    Handler handler(std::move(o->handler_));
    auto ec = o->ec_;
    auto n = o->bytes_transferred_;
    o->~drained_read_op();
    ad::thread_info_base::deallocate(ad::thread_context::thread_call_stack::top(), o,
                                     sizeof(drained_read_op));
    if (owner != nullptr) { // null: the io_context is being destroyed, the op only freed
      ad::fenced_block fence(ad::fenced_block::half);
      handler(ec, n);
    }
  }

  int fd_;
  ad::epoll_reactor::descriptor_state* descriptor_;
  net::mutable_buffer buf_;
  Handler handler_;
};

} // namespace detail
#endif

/// `s.async_read_some(buf, handler)`, but on a plain TCP socket a read that leaves the socket
/// empty spares the next read its failing first attempt (see above); any other stream (TLS, an
/// in-memory one) reads as before. `handler(error_code, std::size_t)`.
template <class Stream, class Handler>
void async_read_drained(Stream& s, net::mutable_buffer buf, Handler&& handler) {
#ifdef TROUPE_DRAINED_READ
  if constexpr (std::is_same_v<Stream, tcp::socket>) {
    namespace ad = boost::asio::detail;
    auto& impl = detail::socket_access::implementation(s);
    auto* d = impl.reactor_data_;
    // (`executor_as`, not `target`: Boost 1.74's `target` would take a strand for the io_context
    // executor it wraps, and this op would run a strand's handler outside it.)
    if (buf.size() > 0 && d != nullptr &&
        executor_as<net::io_context::executor_type>(s.get_executor()) != nullptr) {
      auto& reactor = *(d->*member(detail::descriptor_reactor_tag{}));
      if (detail::watch_peer_close(reactor, impl.socket_, d)) {
        auto* op = detail::drained_read_op<std::decay_t<Handler>>::make(
            impl.socket_, d, buf, std::decay_t<Handler>(std::forward<Handler>(handler)));
        if ((impl.state_ & ad::socket_ops::non_blocking) == 0 &&
            !ad::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true, op->ec_)) {
          reactor.post_immediate_completion(op, false);
          return;
        }
        reactor.start_op(ad::epoll_reactor::read_op, impl.socket_, d, op, false, true);
        return;
      }
    }
  }
#endif
  s.async_read_some(buf, std::forward<Handler>(handler));
}

} // namespace troupe::transport
