#include "apps/troupe-sim/route_table.hpp"

#include <catch2/catch.hpp>

using namespace troupe::sim;
using verb = troupe::transport::http::verb;

TEST_CASE("paths match patterns segment by segment", "[route_table]") {
  std::vector<std::string> params;
  CHECK(match_path("/v1/models", "/v1/models", params));
  CHECK_FALSE(match_path("/v1/models", "/v1/models/x", params));
  CHECK_FALSE(match_path("/v1/models", "/v1/model", params));
  CHECK(match_path("/v1/responses/{}/cancel", "/v1/responses/resp_1/cancel", params));
  REQUIRE(params.size() == 1);
  CHECK(params[0] == "resp_1");
  params.clear();
  CHECK_FALSE(match_path("/v1/responses/{}", "/v1/responses/", params));
  CHECK_FALSE(match_path("/v1/responses/{}", "/v1/responses/a/b", params));
  CHECK(params.empty());
}

TEST_CASE("the table finds the route, or says which methods the path has", "[route_table]") {
  using handler = int;
  route_table<handler> table{{
      {verb::get, "/v1/responses/{}", troupe::protocol::api_format::openai, route_kind::data_plane,
       1},
      {verb::delete_, "/v1/responses/{}", troupe::protocol::api_format::openai,
       route_kind::data_plane, 2},
      {verb::post, "/generate", troupe::protocol::api_format::openai, route_kind::data_plane, 3},
  }};
  auto del = table.find(verb::delete_, "/v1/responses/r9");
  REQUIRE(del.found != nullptr);
  CHECK(del.found->handler == 2);
  CHECK(del.params == std::vector<std::string>{"r9"});

  auto wrong = table.find(verb::get, "/generate");
  CHECK(wrong.found == nullptr);
  CHECK(wrong.path_known);
  CHECK(wrong.allow == "POST");

  auto unknown = table.find(verb::get, "/nope");
  CHECK(unknown.found == nullptr);
  CHECK_FALSE(unknown.path_known);
}
