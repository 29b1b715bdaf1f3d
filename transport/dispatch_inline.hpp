#pragma once

// `net::dispatch` for the type-erased executors of the transport, without its cost when the
// function may run at once.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <typeinfo>
#include <utility>

namespace troupe::transport {

namespace net = boost::asio;

/// `ex`'s executor when it is an `Executor`, else null. Boost 1.74's `any_executor::target`
/// does not check the type (a `static_cast`; later asio compares `target_type` first): asked
/// for an io_context executor, it read a strand as the io executor the strand wraps (its first
/// member), so every io thread passed for every strand's.
template <class Executor> const Executor* executor_as(const net::any_io_executor& ex) {
  if (ex.target_type() != typeid(Executor)) {
    return nullptr;
  }
  return ex.target<Executor>();
}

/// True when `ex` runs its handlers on this thread now: the check `net::dispatch` makes before
/// it runs a function in place.
inline bool runs_here(const net::any_io_executor& ex) {
  using io_executor = net::io_context::executor_type;
  if (auto* io = executor_as<io_executor>(ex)) {
    return io->running_in_this_thread();
  }
  if (auto* strand = executor_as<net::strand<io_executor>>(ex)) {
    return strand->running_in_this_thread();
  }
  return false;
}

/// What `net::dispatch(ex, f)` does: `f` now when `ex` runs on this thread, else on `ex`. In the
/// common case (the caller already on the connection's thread) it skips dispatch's type-erased
/// wrapping of `f` (~0.5k instructions a call on the request path).
template <class F> void dispatch_inline(const net::any_io_executor& ex, F&& f) {
  if (runs_here(ex)) {
    std::forward<F>(f)();
    return;
  }
  net::dispatch(ex, std::forward<F>(f));
}

} // namespace troupe::transport
