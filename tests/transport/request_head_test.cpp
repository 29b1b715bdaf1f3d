#include "transport/upstream_exchange.hpp"

#include <catch2/catch.hpp>

using namespace troupe::transport;

TEST_CASE("a request head is HTTP/1.1 with Host, the given headers and framing of our own") {
  auto head = serialize_request_head(
      http::verb::post, "/v1/chat/completions?beta=true", "gpu-1:8000",
      {{"authorization", "Bearer k"}, {"Content-Length", "999"}, {"connection", "close"}}, 42);
  CHECK(head == "POST /v1/chat/completions?beta=true HTTP/1.1\r\n"
                "Host: gpu-1:8000\r\n"
                "authorization: Bearer k\r\n"
                "Content-Type: application/json\r\n"
                "Content-Length: 42\r\n\r\n");
}

TEST_CASE("a GET has no body framing; a given content type is kept") {
  CHECK(serialize_request_head(http::verb::get, "/health", "h:1", {}, std::nullopt) ==
        "GET /health HTTP/1.1\r\nHost: h:1\r\n\r\n");
  auto head = serialize_request_head(http::verb::post, "/x", "h:1",
                                     {{"content-type", "application/json; charset=utf-8"}}, 0);
  CHECK(head.find("content-type: application/json; charset=utf-8\r\n") != std::string::npos);
  CHECK(head.find("Content-Type: application/json\r\n") == std::string::npos);
}

TEST_CASE("CR and LF never reach the wire inside a header") {
  auto head = serialize_request_head(http::verb::post, "/x", "h:1",
                                     {{"x-api-key", "sk\r\nX-Injected: 1"}}, 0);
  CHECK(head.find("\r\nX-Injected") == std::string::npos);
  CHECK(head.find("x-api-key: skX-Injected: 1\r\n") != std::string::npos);
}
