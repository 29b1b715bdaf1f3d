// allocator_decay against jemalloc, linked into this binary as it is into troupe
// (tests/gateway/CMakeLists.txt): mallctl is found, a decay succeeds, the timer runs one per
// interval until stopped.

#include "gateway/allocator_decay.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

using troupe::gateway::allocator_decay;

TEST_CASE("allocator_decay: with jemalloc linked, a decay runs on each interval until stopped") {
  REQUIRE(allocator_decay::available());
  // Some freed pages for the decay to look at.
  {
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < 256; ++i) {
      blocks.push_back(std::make_unique<char[]>(64 * 1024));
      blocks.back()[0] = 1;
    }
  }
  CHECK(allocator_decay::decay_now());

  boost::asio::io_context ioc;
  allocator_decay decay{ioc, std::chrono::milliseconds(10)};
  decay.start();
  ioc.run_for(std::chrono::milliseconds(200));
  auto runs = decay.runs();
  CHECK(runs >= 3);
  CHECK(runs <= 21);

  decay.stop();
  ioc.restart();
  ioc.run_for(std::chrono::milliseconds(50)); // the wait under way ends; no decay after it
  CHECK(decay.runs() == runs);
  CHECK(ioc.stopped());
}
