#include "protocol/logprobs.hpp"
#include "protocol/sse.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;
using json = nlohmann::ordered_json;

namespace {

const char* prefill_body =
    R"({"text":"x","meta_info":{"id":"p","input_token_logprobs":[[null,1,null],[-0.5,2,null]]}})";

} // namespace

TEST_CASE("only /generate with return_logprob asks for input logprobs") {
  CHECK(wants_input_logprobs(operation::generate, json::parse(R"({"return_logprob":true})")));
  CHECK(
      wants_input_logprobs(operation::generate, json::parse(R"({"return_logprob":[false,true]})")));
  CHECK_FALSE(wants_input_logprobs(operation::generate, json::parse(R"({"return_logprob":0})")));
  CHECK_FALSE(wants_input_logprobs(operation::generate, json::parse(R"({"text":"a"})")));
  CHECK_FALSE(
      wants_input_logprobs(operation::completions, json::parse(R"({"return_logprob":true})")));
}

TEST_CASE("prefill logprobs are prepended to the decode body's") {
  auto lp = read_input_logprobs(prefill_body, false);
  REQUIRE_FALSE(lp.empty());
  auto merged = merge_input_logprobs(
      R"({"text":"yz","meta_info":{"id":"d","input_token_logprobs":[[-1.25,3,null]],"x":1}})", lp);
  REQUIRE(merged);
  CHECK(*merged == R"({"text":"yz","meta_info":{"id":"d","input_token_logprobs":)"
                   R"([[null,1,null],[-0.5,2,null],[-1.25,3,null]],"x":1}})");
}

TEST_CASE("a decode body without input logprobs gets the prefill's") {
  auto lp = read_input_logprobs(prefill_body, false);
  auto merged = merge_input_logprobs(R"({"text":"yz","meta_info":{"id":"d"}})", lp);
  REQUIRE(merged);
  auto j = json::parse(*merged);
  CHECK(j["meta_info"]["input_token_logprobs"].size() == 2);
}

TEST_CASE("nothing to merge leaves the body alone") {
  auto lp = read_input_logprobs(prefill_body, false);
  CHECK_FALSE(merge_input_logprobs(R"({"text":"no meta"})", lp));
  CHECK_FALSE(merge_input_logprobs("not json", lp));
  auto none = read_input_logprobs(R"({"meta_info":{}})", false);
  CHECK(none.empty());
  CHECK_FALSE(merge_input_logprobs(R"({"meta_info":{"input_token_logprobs":[]}})", none));
  CHECK(read_input_logprobs("garbage", false).empty());
  CHECK(read_input_logprobs("garbage", true).empty());
}

TEST_CASE("batch bodies merge element by element") {
  auto lp = read_input_logprobs(R"([{"meta_info":{"input_token_logprobs":[[-1,1,null]]}},)"
                                R"({"meta_info":{"input_token_logprobs":[[-2,2,null]]}}])",
                                false);
  auto merged = merge_input_logprobs(
      R"([{"meta_info":{"input_token_logprobs":[[-9,9,null]]}},{"meta_info":{}}])", lp);
  REQUIRE(merged);
  auto j = json::parse(*merged);
  CHECK(j[0]["meta_info"]["input_token_logprobs"] == json::parse("[[-1,1,null],[-9,9,null]]"));
  CHECK(j[1]["meta_info"]["input_token_logprobs"] == json::parse("[[-2,2,null]]"));
}

TEST_CASE("a streamed prefill response yields the logprobs of each index") {
  std::string stream =
      "data: {\"index\":0,\"meta_info\":{\"input_token_logprobs\":[[-1,1,null]]}}\n\n"
      "data: {\"index\":1,\"meta_info\":{\"input_token_logprobs\":[[-2,2,null]]}}\n\n"
      "data: {\"index\":0,\"meta_info\":{\"input_token_logprobs\":[]}}\n\n"
      "data: [DONE]\n\n";
  auto lp = read_input_logprobs(stream, true);
  REQUIRE(lp.find(0));
  REQUIRE(lp.find(1));
  CHECK(*lp.find(0) == json::parse("[[-1,1,null]]"));
  CHECK(*lp.find(1) == json::parse("[[-2,2,null]]"));
  CHECK_FALSE(lp.find(2));
}

TEST_CASE("each streamed decode chunk is merged by its index") {
  auto lp = read_input_logprobs(
      "data: {\"index\":1,\"meta_info\":{\"input_token_logprobs\":[[-2,2,null]]}}\n\n", true);
  auto ev = merge_input_logprobs_event(
      "data: "
      "{\"index\":1,\"text\":\"a\",\"meta_info\":{\"input_token_logprobs\":[[-3,3,null]]}}\n\n",
      lp);
  REQUIRE(ev);
  CHECK(*ev == "data: {\"index\":1,\"text\":\"a\",\"meta_info\":{\"input_token_logprobs\":"
               "[[-2,2,null],[-3,3,null]]}}\n\n");
  // Index 0 has no prefill logprobs; [DONE] and non-JSON pass unchanged.
  CHECK_FALSE(merge_input_logprobs_event("data: {\"index\":0,\"meta_info\":{}}\n\n", lp));
  CHECK_FALSE(merge_input_logprobs_event("data: [DONE]\n\n", lp));
  CHECK_FALSE(merge_input_logprobs_event("data: oops\n\n", lp));
}

TEST_CASE("a named event keeps its name when merged") {
  auto lp = read_input_logprobs(prefill_body, false);
  auto ev = merge_input_logprobs_event("event: chunk\r\ndata: {\"meta_info\":{}}\r\n\r\n", lp);
  REQUIRE(ev);
  CHECK(parse_sse_event(*ev).event == "chunk");
  CHECK(ev->substr(ev->size() - 2) == "\n\n");
}

TEST_CASE("floats survive the merge exactly") {
  auto lp = read_input_logprobs(
      R"({"meta_info":{"input_token_logprobs":[[-0.1234567890123,1,null]]}})", false);
  auto merged =
      merge_input_logprobs(R"({"meta_info":{"input_token_logprobs":[[-1e-7,2,null]]}})", lp);
  REQUIRE(merged);
  auto j = json::parse(*merged);
  CHECK(j["meta_info"]["input_token_logprobs"][0][0].get<double>() == -0.1234567890123);
  CHECK(j["meta_info"]["input_token_logprobs"][1][0].get<double>() == -1e-7);
}
