#include "protocol/sse.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace troupe::protocol;

namespace {

std::vector<std::string> feed_all(sse_framer& f, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (auto& p : pieces) {
    f.feed(p, [&](std::string_view ev) { out.emplace_back(ev); });
  }
  return out;
}

} // namespace

TEST_CASE("the framer yields whole events however the bytes are split") {
  std::string stream = "data: one\n\ndata: two\n\nevent: x\ndata: three\n\n";
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    sse_framer f;
    auto events = feed_all(f, {stream.substr(0, cut), stream.substr(cut)});
    REQUIRE(events.size() == 3);
    CHECK(events[0] == "data: one\n\n");
    CHECK(events[2] == "event: x\ndata: three\n\n");
    CHECK(f.pending().empty());
  }
}

TEST_CASE("the framer handles CRLF line ends and byte-by-byte input") {
  std::string stream = "data: a\r\n\r\ndata: b\n\n";
  sse_framer f;
  std::vector<std::string> pieces;
  for (char c : stream) {
    pieces.emplace_back(1, c);
  }
  auto events = feed_all(f, pieces);
  REQUIRE(events.size() == 2);
  CHECK(parse_sse_event(events[0]).data == "a");
  CHECK(parse_sse_event(events[1]).data == "b");
}

TEST_CASE("an unterminated event stays pending") {
  sse_framer f;
  auto events = feed_all(f, {"data: done\n\ndata: partial"});
  CHECK(events.size() == 1);
  CHECK(f.pending() == "data: partial");
}

TEST_CASE("events parse into name and joined data") {
  auto ev = parse_sse_event("event: content_block_delta\ndata: {\"a\":1}\ndata: more\n\n");
  CHECK(ev.event == "content_block_delta");
  CHECK(ev.data == "{\"a\":1}\nmore");
  CHECK(is_done_event("data: [DONE]\n\n"));
  CHECK_FALSE(is_done_event("data: {}\n\n"));
  CHECK(format_sse_event("{}", "ping") == "event: ping\ndata: {}\n\n");
}

TEST_CASE("event-stream content types match case-insensitively, with parameters") {
  CHECK(is_event_stream("text/event-stream"));
  CHECK(is_event_stream("Text/Event-Stream; charset=utf-8"));
  CHECK(is_event_stream(" text/event-stream "));
  CHECK_FALSE(is_event_stream("application/json"));
  CHECK_FALSE(is_event_stream("text/event-streams"));
}
