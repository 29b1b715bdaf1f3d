#include "transport/response_wire.hpp"
#include "transport/serialized_head.hpp"

#include <catch2/catch.hpp>

using namespace troupe::transport;

namespace {

std::string bytes(const wire_item& w) {
  return w.prefix + w.payload + std::string(w.suffix);
}

} // namespace

TEST_CASE("a serialized field loses its CR and LF: no field can be injected") {
  std::string fields;
  append_field(fields, "x-a", "1\r\nx-injected: 2");
  append_field(fields, "x-\nb", "3");
  CHECK(fields == "x-a: 1x-injected: 2\r\nx-b: 3\r\n");
}

TEST_CASE("serialized fields keep order and repeats, and leave framing to the connection") {
  auto head = serialize_fields(201, {{"Set-Cookie", "a=1"},
                                     {"content-LENGTH", "9"},
                                     {"Set-Cookie", "b=2"},
                                     {"Transfer-Encoding", "chunked"},
                                     {"connection", "close"},
                                     {"x-request-id", "rid"}});
  CHECK(head.status == 201);
  CHECK(head.fields == "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nx-request-id: rid\r\n");
  CHECK(to_header_list(head.fields) ==
        header_list{{"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}, {"x-request-id", "rid"}});
  CHECK(to_header_list("x-empty: \r\n") == header_list{{"x-empty", ""}});
}

TEST_CASE("a serialized head becomes the response it stands for") {
  auto res = to_response({404, "Content-Type: application/json\r\nx-a: 1\r\nx-a: 2\r\n"}, "{}");
  CHECK(res.result_int() == 404);
  CHECK(res[http::field::content_type] == "application/json");
  CHECK(std::distance(res.equal_range("x-a").first, res.equal_range("x-a").second) == 2);
  CHECK(res.body() == "{}");
}

TEST_CASE("status lines carry the status's reason, an unknown status Beast's placeholder") {
  std::string out;
  append_status_line(out, 200);
  append_status_line(out, 429);
  append_status_line(out, 299);
  CHECK(out == "HTTP/1.1 200 OK\r\nHTTP/1.1 429 Too Many Requests\r\n"
               "HTTP/1.1 299 <unknown-status>\r\n");
}

TEST_CASE("a serialized response goes on the wire as the same response built as a message") {
  for (auto [version, keep_alive] :
       {std::pair{11u, true}, std::pair{11u, false}, std::pair{10u, true}, std::pair{10u, false}}) {
    CAPTURE(version, keep_alive);
    serialized_head head{200, "Content-Type: application/json\r\nx-request-id: rid\r\n"};
    response_framer built;
    built.begin(version, keep_alive);
    auto res = std::make_shared<response>(to_response(head, "{\"a\":1}"));
    auto expected = bytes(built.frame(write_item{res}));
    response_framer serialized;
    serialized.begin(version, keep_alive);
    auto got = bytes(serialized.frame(write_item{write_item::serialized{head, "{\"a\":1}"}}));
    CHECK(got == expected);
    CHECK(got.starts_with("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                          "x-request-id: rid\r\nContent-Length: 7"));
    CHECK(serialized.keep_alive() == built.keep_alive());
  }
}

TEST_CASE("a serialized stream head is chunked on HTTP/1.1 and closes on HTTP/1.0") {
  response_framer f11;
  f11.begin(11, true);
  auto head11 = bytes(f11.frame(write_item{write_item::head{{200, "x-a: 1\r\n"}}}));
  CHECK(head11 == "HTTP/1.1 200 OK\r\nx-a: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(bytes(f11.frame(write_item{write_item::chunk{"data: x\n\n"}})) == "9\r\ndata: x\n\n\r\n");
  CHECK(bytes(f11.frame(write_item{write_item::last_chunk{}})) == "0\r\n\r\n");
  response_framer f10;
  f10.begin(10, true);
  auto head10 = bytes(f10.frame(write_item{write_item::head{{200, "x-a: 1\r\n"}}}));
  CHECK(head10 == "HTTP/1.1 200 OK\r\nx-a: 1\r\nConnection: close\r\n\r\n");
  CHECK_FALSE(f10.keep_alive());
}

TEST_CASE("the answer to a HEAD is its head alone, with the framing fields a GET would get") {
  serialized_head head{200, "Content-Type: application/json\r\n"};
  const std::string body = "{\"a\":1}";
  response_framer f;
  f.begin(11, true, true);
  CHECK(bytes(f.frame(write_item{write_item::serialized{head, body}})) ==
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n");
  f.begin(11, true, true);
  CHECK(bytes(f.frame(write_item{std::make_shared<response>(to_response(head, body))})) ==
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n");
  CHECK(f.keep_alive());
  // A stream: its head (chunked, as a GET's), then nothing for its chunks nor its end.
  f.begin(11, true, true);
  CHECK(bytes(f.frame(write_item{write_item::head{{200, "x-a: 1\r\n"}}})) ==
        "HTTP/1.1 200 OK\r\nx-a: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(bytes(f.frame(write_item{write_item::chunk{"data: x\n\n"}})).empty());
  CHECK(bytes(f.frame(write_item{write_item::last_chunk{}})).empty());
  CHECK(f.keep_alive());
  // HTTP/1.0: the head says the connection closes, as a GET's would.
  f.begin(10, true, true);
  CHECK(bytes(f.frame(write_item{write_item::head{{200, "x-a: 1\r\n"}}})) ==
        "HTTP/1.1 200 OK\r\nx-a: 1\r\nConnection: close\r\n\r\n");
  CHECK(bytes(f.frame(write_item{write_item::chunk{"data: x\n\n"}})).empty());
  CHECK_FALSE(f.keep_alive());
  // The next request on the connection is not a HEAD: its answer has its content again.
  f.begin(11, true);
  CHECK(
      bytes(f.frame(write_item{write_item::serialized{head, body}})).ends_with("\r\n\r\n" + body));
}
