#include "transport/handler_tail.hpp"

#include <catch2/catch.hpp>
#include <vector>

using troupe::transport::handler_tail;

namespace {

/// Appends the item (an int) to the owner (a vector).
void record(void* owner, void* item) {
  static_cast<std::vector<int>*>(owner)->push_back(*static_cast<int*>(item));
}

} // namespace

TEST_CASE("without an open tail nothing is deferred: the caller posts as before") {
  std::vector<int> seen;
  int one = 1;
  CHECK_FALSE(handler_tail::open());
  CHECK_FALSE(handler_tail::defer(&record, &seen, &one));
  CHECK(seen.empty());
}

TEST_CASE("deferred work runs in order when the handler's own work is done") {
  std::vector<int> seen;
  int one = 1;
  int two = 2;
  {
    handler_tail tail;
    CHECK(handler_tail::open());
    CHECK(handler_tail::defer(&record, &seen, &one));
    CHECK(handler_tail::defer(&record, &seen, &two));
    seen.push_back(0); // the handler's own work
    CHECK(seen == std::vector<int>{0});
  }
  CHECK(seen == std::vector<int>{0, 1, 2});
  CHECK_FALSE(handler_tail::open());
}

TEST_CASE("an inner tail adds to the outermost one") {
  std::vector<int> seen;
  int one = 1;
  {
    handler_tail outer;
    {
      handler_tail inner;
      CHECK(handler_tail::defer(&record, &seen, &one));
    }
    CHECK(seen.empty()); // not at the inner tail's end
  }
  CHECK(seen == std::vector<int>{1});
}

namespace {

struct chain {
  std::vector<int> seen;
  int next = 0;
};

/// Records itself and defers the next, up to 3: work run in a tail may defer more to it.
void step(void* owner, void* item) {
  auto* c = static_cast<chain*>(owner);
  c->seen.push_back(*static_cast<int*>(item));
  if (++c->next < 3) {
    CHECK(handler_tail::defer(&step, c, &c->next));
  }
}

} // namespace

TEST_CASE("work deferred while the tail runs runs in the same tail") {
  chain c;
  {
    handler_tail tail;
    CHECK(handler_tail::defer(&step, &c, &c.next));
  }
  CHECK(c.seen == std::vector<int>{0, 1, 2});
}

TEST_CASE("a full tail refuses more: the caller posts it") {
  std::vector<int> seen;
  std::vector<int> items(handler_tail::capacity + 1);
  {
    handler_tail tail;
    for (std::size_t i = 0; i < handler_tail::capacity; ++i) {
      items[i] = static_cast<int>(i);
      CHECK(handler_tail::defer(&record, &seen, &items[i]));
    }
    CHECK_FALSE(handler_tail::defer(&record, &seen, &items.back()));
  }
  CHECK(seen.size() == handler_tail::capacity);
}
