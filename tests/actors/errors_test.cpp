#include "actors/errors.hpp"

#include <caf/sec.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::actors;

TEST_CASE("every api error survives the trip through caf::error") {
  for (int i = 0; i <= static_cast<int>(protocol::error_code::gateway_timeout); ++i) {
    auto code = static_cast<protocol::error_code>(i);
    auto e = to_caf_error({code, "message " + std::to_string(i), "param"});
    REQUIRE(e); // code 0 must not collapse into "no error"
    auto back = to_api_error(e);
    CHECK(back.code == code);
    CHECK(back.message == "message " + std::to_string(i));
    CHECK(back.param == "param");
  }
}

TEST_CASE("CAF's own errors become internal or gateway errors") {
  CHECK(to_api_error(caf::make_error(caf::sec::request_receiver_down)).code ==
        protocol::error_code::bad_gateway);
  CHECK(to_api_error(caf::make_error(caf::sec::unexpected_message)).code ==
        protocol::error_code::internal_error);
}

TEST_CASE("a gateway out of resources tells the client when to retry; a worker's failure does "
          "not") {
  auto res = make_error_response({protocol::error_code::out_of_resources, "no socket", {}},
                                 protocol::api_format::openai, "rid", 11);
  CHECK(res.result_int() == 503);
  CHECK(res[transport::http::field::retry_after] == "1");
  CHECK(res["x-request-id"] == "rid");
  auto other = make_error_response({protocol::error_code::bad_gateway, "reset", {}},
                                   protocol::api_format::anthropic, "rid", 11);
  CHECK(other.result_int() == 502);
  CHECK(other.find(transport::http::field::retry_after) == other.end());
}
