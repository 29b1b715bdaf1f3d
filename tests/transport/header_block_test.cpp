#include "transport/header_block.hpp"

#include <catch2/catch.hpp>

using namespace troupe::transport;

TEST_CASE("a header block serializes its fields in order, one line each") {
  header_block b;
  CHECK(b.empty());
  b.add("x-request-id", "rid-1");
  b.add("authorization", "Bearer ", "sk-1");
  CHECK(b.bytes() == "x-request-id: rid-1\r\nauthorization: Bearer sk-1\r\n");
  CHECK(b.list() == header_list{{"x-request-id", "rid-1"}, {"authorization", "Bearer sk-1"}});
  CHECK_FALSE(b.has_content_type());
}

TEST_CASE("a header block leaves framing to the gateway and notes a content type") {
  header_block b{{"Host", "elsewhere"},
                 {"content-length", "9"},
                 {"Connection", "close"},
                 {"Transfer-Encoding", "chunked"},
                 {"Content-Type", "text/plain"}};
  CHECK(b.bytes() == "Content-Type: text/plain\r\n");
  CHECK(b.has_content_type());
}

TEST_CASE("a header block never lets CR or LF through a name, prefix or value") {
  header_block b;
  b.add("x-a\r\nX-Injected", "1");
  b.add("authorization", "Bearer \n", "k\r\nX-Injected: 2");
  CHECK(b.bytes() == "x-aX-Injected: 1\r\nauthorization: Bearer kX-Injected: 2\r\n");
}
