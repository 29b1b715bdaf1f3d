#include "transport/response_parser.hpp"
#include "transport/upstream_exchange.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace troupe::transport;

namespace {

/// Keeps what the parser hands it; refuses body pieces once `refuse_after` bytes arrived.
class recording_sink final : public response_sink {
public:
  bool on_head(const response_head&) override { return true; }
  bool on_body(std::string_view piece) override {
    pieces.emplace_back(piece);
    body.append(piece);
    return body.size() <= refuse_after;
  }
  void on_complete() override {}

  std::vector<std::string> pieces;
  std::string body;
  std::size_t refuse_after = std::size_t(-1);
};

/// A parser over a recording sink, without a body limit of its own (as an exchange makes it).
struct parsing {
  parsing() { p.body_limit(std::uint64_t(-1)); }
  recording_sink sink;
  response_parser p{sink};
};

/// The head's fields as "name: value" lines.
std::vector<std::string> lines_of(const response_head& head) {
  std::vector<std::string> out;
  for (auto& f : head) {
    out.push_back(std::string(f.name_string()) + ": " + std::string(f.value()));
  }
  return out;
}

/// The head of a chunked response.
constexpr std::string_view chunked_head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

/// Parses `bytes` whole: the head, then the body piece by piece, as an exchange does; the
/// error that stopped it, if any.
beast::error_code parse_all(response_parser& p, std::string_view bytes) {
  beast::error_code ec;
  auto used = p.parse_head(net::buffer(bytes.data(), bytes.size()), ec);
  bytes.remove_prefix(used);
  while (!ec && !p.is_done() && !bytes.empty()) {
    used = p.put(net::buffer(bytes.data(), bytes.size()), ec);
    bytes.remove_prefix(used);
    if (used == 0) {
      break;
    }
  }
  return ec;
}

} // namespace

TEST_CASE_METHOD(parsing, "a head's fields are seen in order, known ones by their enum") {
  std::string bytes = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                      "X-Custom:  padded value \r\nContent-Length: 2\r\n\r\n{}";
  beast::error_code ec;
  auto used = p.parse_head(net::buffer(bytes), ec);
  REQUIRE_FALSE(ec);
  REQUIRE(p.is_header_done());
  auto head = p.head();
  CHECK(head.result_int() == 201);
  CHECK(p.status() == 201);
  CHECK(lines_of(head) == std::vector<std::string>{"Content-Type: application/json",
                                                   "X-Custom: padded value", "Content-Length: 2"});
  CHECK(head[http::field::content_type] == "application/json");
  CHECK(head[http::field::content_length] == "2");
  CHECK(head[http::field::connection].empty());
  // The fields are views into the bytes parsed: no copy was made.
  auto first = *head.begin();
  CHECK(first.value().data() >= bytes.data());
  CHECK(first.value().data() < bytes.data() + bytes.size());
  // The body goes to the sink.
  used += p.put(net::buffer(bytes.data() + used, bytes.size() - used), ec);
  REQUIRE_FALSE(ec);
  CHECK(p.is_done());
  CHECK(sink.body == "{}");
  CHECK(p.body_bytes() == 2);
  CHECK(p.keep_alive());
}

TEST_CASE_METHOD(parsing, "a folded field's value is kept after the parse") {
  std::string bytes = "HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\nX-Also: a\r\n b\r\n"
                      "Content-Length: 0\r\n\r\n";
  beast::error_code ec;
  p.parse_head(net::buffer(bytes), ec);
  REQUIRE_FALSE(ec);
  // Beast unfolds into a buffer of its own that is gone once the parse returns: the parser
  // copied each unfolded value (both must still read right, not the last one twice).
  auto lines = lines_of(p.head());
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "X-Folded: one two");
  CHECK(lines[1] == "X-Also: a b");
  CHECK(p.is_done());
}

TEST_CASE_METHOD(parsing, "a chunked body reaches the sink without its framing, trailers ignored") {
  auto bytes =
      std::string(chunked_head) + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";
  REQUIRE_FALSE(parse_all(p, bytes));
  CHECK(p.is_done());
  CHECK(sink.body == "hello world");
  CHECK(p.body_bytes() == 11);
  CHECK(lines_of(p.head()) == std::vector<std::string>{"Transfer-Encoding: chunked"});
}

TEST_CASE_METHOD(parsing, "a body the sink refuses fails the parse as refused") {
  sink.refuse_after = 3;
  CHECK(parse_all(p, std::string(chunked_head) + "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"));
  CHECK(p.refused());
  CHECK(sink.body == "abcdef"); // the piece that went over was the one refused
}

TEST_CASE("a malformed head is an error, not a head") {
  recording_sink sink;
  response_parser p{sink};
  std::string bytes = "HTTP/1.1 2x0 OK\r\n\r\n";
  beast::error_code ec;
  p.parse_head(net::buffer(bytes), ec);
  CHECK(ec);
  CHECK_FALSE(p.is_header_done());
  CHECK_FALSE(p.refused());
}

TEST_CASE("HTTP/1.0 and Connection: close end the connection's reuse") {
  for (std::string bytes : {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
                            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"}) {
    recording_sink sink;
    response_parser p{sink};
    beast::error_code ec;
    p.parse_head(net::buffer(bytes), ec);
    REQUIRE_FALSE(ec);
    CHECK(p.is_done());
    CHECK_FALSE(p.keep_alive());
  }
}

TEST_CASE_METHOD(parsing, "a head split over reads keeps the fields parsed before the bytes left") {
  // As an exchange reads: Beast parses the start line and the whole fields of the first read
  // and reports it needs more; the caller consumes those bytes, and its buffer may then move
  // or be overwritten before the rest arrives.
  std::string first = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-One: 1\r\nX-Tw";
  beast::error_code ec;
  auto used = p.parse_head(net::buffer(first), ec);
  REQUIRE(ec == http::error::need_more);
  REQUIRE_FALSE(p.is_header_done());
  REQUIRE(used > 0);
  std::string rest = first.substr(used) + "o: 2\r\nContent-Length: 0\r\n\r\n";
  std::fill(first.begin(), first.end(), '#'); // the old bytes are gone
  used = p.parse_head(net::buffer(rest), ec);
  REQUIRE_FALSE(ec);
  REQUIRE(p.is_done());
  CHECK(used == rest.size());
  CHECK(lines_of(p.head()) == std::vector<std::string>{"Content-Type: application/json", "X-One: 1",
                                                       "X-Two: 2", "Content-Length: 0"});
  CHECK(p.head()[http::field::content_type] == "application/json");
}

TEST_CASE_METHOD(parsing, "a head dribbled a byte at a time parses as one read does") {
  std::string bytes = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nX-Folded: a\r\n b\r\n"
                      "Content-Length: 4\r\n\r\nnope";
  std::string buffer; // what an exchange's read buffer holds: the bytes not yet consumed
  std::vector<std::string> head_lines;
  beast::error_code ec;
  for (char c : bytes) {
    buffer.push_back(c);
    bool head_done = p.is_header_done();
    auto used = head_done ? p.put(net::buffer(buffer), ec) : p.parse_head(net::buffer(buffer), ec);
    if (ec == http::error::need_more) {
      ec = {};
    }
    REQUIRE_FALSE(ec);
    if (!head_done && p.is_header_done()) {
      head_lines = lines_of(p.head()); // as the exchange does: before the bytes go
    }
    // The bytes used leave the buffer, and the memory they were in is reused.
    std::fill(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(used), '#');
    buffer.erase(0, used);
  }
  CHECK(p.is_done());
  CHECK(p.status() == 404);
  CHECK(sink.body == "nope");
  CHECK(head_lines ==
        std::vector<std::string>{"Content-Type: text/plain", "X-Folded: a b", "Content-Length: 4"});
}
