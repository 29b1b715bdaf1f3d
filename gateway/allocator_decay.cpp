#include "gateway/allocator_decay.hpp"

#include <cstddef>

// jemalloc's control interface, declared weak: linked with jemalloc it is jemalloc's, without
// it (the test binaries, sanitizer builds) it is null.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp,
                       std::size_t newlen) __attribute__((weak));

namespace troupe::gateway {

namespace {

/// `arena.<i>.decay` for every arena (jemalloc.h's MALLCTL_ARENAS_ALL is 4096).
constexpr const char* decay_all_arenas = "arena.4096.decay";

} // namespace

allocator_decay::allocator_decay(boost::asio::io_context& ioc, std::chrono::milliseconds interval)
    : timer_(ioc), interval_(interval) {}

bool allocator_decay::available() noexcept {
  return mallctl != nullptr;
}

bool allocator_decay::decay_now() noexcept {
  return available() && mallctl(decay_all_arenas, nullptr, nullptr, nullptr, 0) == 0;
}

void allocator_decay::start() {
  if (started_ || !available() || interval_.count() <= 0) {
    return;
  }
  started_ = true;
  arm();
}

void allocator_decay::stop() noexcept {
  stopped_ = true;
}

void allocator_decay::arm() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) {
      return;
    }
    if (decay_now()) {
      ++runs_;
    }
    arm();
  });
}

} // namespace troupe::gateway
