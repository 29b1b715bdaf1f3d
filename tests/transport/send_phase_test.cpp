#include "transport/send_phase.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <stdexcept>
#include <string>

using namespace troupe::transport;

TEST_CASE("without a deferring loop a write runs at once") {
  std::string log;
  send_phase::defer([&] { log += "a"; }); // no scope on this thread
  CHECK(log == "a");
  {
    send_phase::scope off{0}; // batch 0: writes are never deferred
    off.defer_writes(true);
    CHECK_FALSE(send_phase::deferring());
    send_phase::defer([&] { log += "b"; });
    CHECK(log == "ab");
  }
  send_phase::scope idle{32}; // a loop that batches, but not busy now
  CHECK_FALSE(send_phase::deferring());
  send_phase::defer([&] { log += "c"; });
  CHECK(log == "abc");
  CHECK(send_phase::pending() == 0);
}

TEST_CASE("deferred writes wait for the flush and run in the order they came") {
  send_phase::scope sends{32};
  sends.defer_writes(true);
  std::string log;
  for (char c : std::string("xyz")) {
    send_phase::defer([&log, c] { log += c; });
  }
  CHECK(log.empty());
  CHECK(send_phase::pending() == 3);
  CHECK(send_phase::flush() == 3);
  CHECK(log == "xyz");
  CHECK(send_phase::pending() == 0);
  CHECK(send_phase::flush() == 0);
}

TEST_CASE("a write that defers another runs it in the same flush, after the rest") {
  send_phase::scope sends{32};
  sends.defer_writes(true);
  std::string log;
  send_phase::defer([&] {
    log += "1";
    send_phase::defer([&] { log += "3"; }); // e.g. a write done at once that starts the next
    CHECK(send_phase::flush() == 0);        // no nested flush: the running one takes it
  });
  send_phase::defer([&] { log += "2"; });
  CHECK(send_phase::flush() == 3);
  CHECK(log == "123");
}

TEST_CASE("the end of the loop's scope sends what is left, and defers no more") {
  std::string log;
  {
    send_phase::scope sends{32};
    sends.defer_writes(true);
    send_phase::defer([&] { log += "a"; });
    CHECK(log.empty());
  }
  CHECK(log == "a");
  CHECK_FALSE(send_phase::deferring());
  send_phase::defer([&] { log += "b"; });
  CHECK(log == "ab");
}

TEST_CASE("a write that throws leaves the writes behind it queued") {
  send_phase::scope sends{32};
  sends.defer_writes(true);
  std::string log;
  send_phase::defer([] { throw std::runtime_error("boom"); });
  send_phase::defer([&] { log += "after"; });
  CHECK_THROWS_AS(send_phase::flush(), std::runtime_error);
  CHECK(send_phase::pending() == 1);
  CHECK(send_phase::flush() == 1); // the next flush is not blocked by the failed one
  CHECK(log == "after");
}

namespace {

struct writer {
  std::string& log;
  char c;
  void write() { log += c; }
};

} // namespace

TEST_CASE("a member write keeps its object alive until it runs, in order with the others") {
  std::string log;
  auto first = std::make_shared<writer>(writer{log, '1'});
  std::weak_ptr<writer> watch = first;
  send_phase::defer<&writer::write>(first); // no scope on this thread: at once
  CHECK(log == "1");
  {
    send_phase::scope sends{32};
    sends.defer_writes(true);
    send_phase::defer<&writer::write>(std::move(first));
    send_phase::defer([&] { log += "2"; });
    send_phase::defer<&writer::write>(std::make_shared<writer>(writer{log, '3'}));
    CHECK(log == "1");
    CHECK_FALSE(watch.expired()); // the queue holds the only reference
    CHECK(send_phase::pending() == 3);
    CHECK(send_phase::flush() == 3);
    CHECK(log == "1123");
    CHECK(watch.expired()); // let go once its write ran
  }
}
