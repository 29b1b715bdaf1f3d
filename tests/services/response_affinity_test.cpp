#include "services/response_affinity.hpp"

#include <catch2/catch.hpp>

using namespace troupe::services;

TEST_CASE("the affinity map remembers response ids, oldest forgotten first") {
  response_affinity a{2};
  a.remember("r1", "w1");
  a.remember("r2", "w2");
  CHECK(a.worker_of("r1") == "w1");
  a.remember("r3", "w1");
  CHECK_FALSE(a.worker_of("r1"));
  CHECK(a.worker_of("r2") == "w2");
  CHECK(a.worker_of("r3") == "w1");
  CHECK(a.size() == 2);
}

TEST_CASE("created response ids come from bodies and response.created events") {
  CHECK(created_response_id(R"({"id":"resp_1","object":"response","output":[]})") == "resp_1");
  CHECK(created_response_id(R"({"id":"chatcmpl_1","object":"chat.completion"})").empty());
  CHECK(created_response_id("event: response.created\ndata: "
                            R"({"type":"response.created","response":{"id":"resp_2"}})"
                            "\n\n") == "resp_2");
  CHECK(created_response_id("event: response.output_text.delta\ndata: {\"delta\":\"x\"}\n\n")
            .empty());
}

TEST_CASE("the observer records the first id only") {
  auto a = std::make_shared<response_affinity>();
  auto observe = remember_response_id(a, "w7");
  observe("event: response.created\ndata: "
          R"({"type":"response.created","response":{"id":"resp_9"}})"
          "\n\n");
  observe(R"({"id":"resp_other","object":"response"})");
  CHECK(a->worker_of("resp_9") == "w7");
  CHECK_FALSE(a->worker_of("resp_other"));
}
