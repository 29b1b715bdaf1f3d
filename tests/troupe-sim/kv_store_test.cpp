#include "apps/troupe-sim/kv_store.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

using namespace troupe::sim;
using namespace std::chrono_literals;

TEST_CASE("pinned blocks are read once, then freed", "[kv_store]") {
  boost::asio::io_context ioc;
  kv_store store{ioc, "engine-a"};
  auto ids = store.pin({11, 12, 13}, std::nullopt, 10s);
  REQUIRE(ids.size() == 3);
  CHECK(store.pinned_blocks() == 3);
  auto r = store.read("engine-a", ids, {11, 12, 13});
  CHECK(r.status == 200);
  CHECK(r.blocks == 3);
  CHECK(store.pinned_blocks() == 0);
  CHECK(store.counters().sent_blocks == 3);
  auto again = store.read("engine-a", ids, {11, 12, 13});
  CHECK(again.status == 404);
  CHECK(store.counters().refused_reads == 1);
}

TEST_CASE("a read naming another engine or another prompt is refused and frees nothing",
          "[kv_store]") {
  boost::asio::io_context ioc;
  kv_store store{ioc, "engine-a"};
  auto ids = store.pin({1, 2}, std::nullopt, 10s);
  CHECK(store.read("engine-b", ids, {1, 2}).status == 409);
  CHECK(store.read("engine-a", ids, {1, 99}).status == 422);
  CHECK(store.read("engine-a", ids, {1}).status == 422); // the reader's prompt is shorter
  CHECK(store.pinned_blocks() == 2);
  CHECK(store.read("engine-a", ids, {1, 2}).status == 200);
}

TEST_CASE("a prompt without a full block pins nothing", "[kv_store]") {
  boost::asio::io_context ioc;
  kv_store store{ioc, "e"};
  CHECK(store.pin({}, std::nullopt, 10s).empty());
  CHECK(store.counters().pins == 0);
  CHECK(store.read("e", {}, {}).status == 200);
}

TEST_CASE("blocks nobody reads expire after the hold", "[kv_store]") {
  boost::asio::io_context ioc;
  kv_store store{ioc, "e"};
  auto ids = store.pin({5, 6}, std::nullopt, 20ms);
  store.pin({7}, std::nullopt, 10s);
  ioc.run_for(100ms);
  CHECK(store.counters().expired_blocks == 2);
  CHECK(store.pinned_blocks() == 1);
  CHECK(store.read("e", ids, {5, 6}).status == 404);
}

TEST_CASE("a transfer id reads exactly the blocks of its prompt", "[kv_store]") {
  boost::asio::io_context ioc;
  kv_store store{ioc, "e"};
  store.pin({3, 4}, std::string("xfer-1"), 10s);
  CHECK(store.read_transfer("e", "xfer-2", {3, 4}).status == 404);
  CHECK(store.read_transfer("e", "xfer-1", {3}).status == 422);
  CHECK(store.read_transfer("x", "xfer-1", {3, 4}).status == 409);
  auto r = store.read_transfer("e", "xfer-1", {3, 4});
  CHECK(r.status == 200);
  CHECK(r.blocks == 2);
  CHECK(store.read_transfer("e", "xfer-1", {3, 4}).status == 404);
  CHECK(store.pinned_blocks() == 0);
}
