#include "transport/call_body.hpp"

#include <catch2/catch.hpp>

using troupe::transport::call_body;

TEST_CASE("a call body holds bytes of its own, or views bytes its owner keeps") {
  call_body own = std::string(100, 'x');
  CHECK(own.size() == 100);
  CHECK(own == std::string(100, 'x'));
  CHECK(call_body{"{}"} == "{}");
  CHECK(call_body{}.empty());

  auto kept = std::make_shared<const std::string>(std::string(100 * 1024, 'p'));
  auto first = call_body::shared(kept);
  auto second = first; // a retry, or the other leg of a pair
  CHECK(first.view().data() == kept->data());
  CHECK(second.view().data() == kept->data());
  CHECK(second.size() == 100 * 1024);
  kept.reset(); // the bodies keep their bytes alive
  CHECK(second == std::string(100 * 1024, 'p'));
  auto moved = std::move(first);
  CHECK(moved.view().data() == second.view().data());
}
