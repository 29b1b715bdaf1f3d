// allocator_decay in a binary without jemalloc (the test binaries link glibc's malloc): it must
// do nothing, and leave nothing pending on the io loop. allocator_decay_with_jemalloc.cpp runs
// it against jemalloc.

#include "gateway/allocator_decay.hpp"

#include <catch2/catch.hpp>

using troupe::gateway::allocator_decay;

TEST_CASE("allocator_decay: without jemalloc it is unavailable and never arms its timer") {
  REQUIRE_FALSE(allocator_decay::available());
  CHECK_FALSE(allocator_decay::decay_now());
  boost::asio::io_context ioc;
  allocator_decay decay{ioc, std::chrono::milliseconds(1)};
  decay.start();
  // Nothing pending: run() returns at once, having run no handler.
  CHECK(ioc.run() == 0);
  CHECK(decay.runs() == 0);
  decay.stop();
}
