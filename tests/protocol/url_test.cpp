#include "protocol/url.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;

TEST_CASE("base urls parse into scheme, host, port and path") {
  std::string why;
  auto u = parse_base_url("http://10.0.0.1:8000", why);
  REQUIRE(u);
  CHECK(u->host == "10.0.0.1");
  CHECK(u->port == 8000);
  CHECK(u->path.empty());
  CHECK(u->canonical() == "http://10.0.0.1:8000");

  auto s = parse_base_url("HTTPS://api.example.com/v1/", why);
  REQUIRE(s);
  CHECK(s->scheme == "https");
  CHECK(s->port == 443);
  CHECK(s->path == "/v1");
  CHECK(s->authority() == "api.example.com");

  auto v6 = parse_base_url("http://[::1]:9000", why);
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->canonical() == "http://[::1]:9000");
}

TEST_CASE("bad urls are refused with a reason") {
  std::string why;
  for (auto bad : {"localhost:8000", "ftp://x:1", "http://:80", "http://h:0", "http://h:99999",
                   "http://h:12ab", "http://u:p@h:1", "http://h:1/p?q=1"}) {
    why.clear();
    CHECK_FALSE(parse_base_url(bad, why));
    CHECK_FALSE(why.empty());
  }
}
