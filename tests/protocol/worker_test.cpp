#include "protocol/worker.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe::protocol;
using json = nlohmann::json;

TEST_CASE("worker specs are read from POST /workers bodies") {
  std::string why;
  auto spec = worker_spec_from_json(
      json{{"url", "http://h:1"}, {"worker_type", "prefill"}, {"bootstrap_port", 8998}}, why);
  REQUIRE(spec);
  CHECK(spec->type == worker_type::prefill);
  CHECK(spec->bootstrap_port == 8998);
  CHECK_FALSE(spec->model_id);
}

TEST_CASE("bad worker specs say what is wrong") {
  std::string why;
  CHECK_FALSE(worker_spec_from_json(json{{"worker_type", "regular"}}, why));
  CHECK(why.find("url") != std::string::npos);
  CHECK_FALSE(worker_spec_from_json(json{{"url", "http://h:1"}, {"worker_type", "boss"}}, why));
  CHECK_FALSE(worker_spec_from_json(json{{"url", "http://h:1"}, {"urll", "x"}}, why));
  CHECK(why.find("urll") != std::string::npos);
  CHECK_FALSE(worker_spec_from_json(json{{"url", 5}}, why));
  CHECK_FALSE(worker_spec_from_json(json{{"url", "http://h:1"}, {"bootstrap_port", 70000}}, why));
  CHECK_FALSE(worker_spec_from_json(json::array(), why));
}

TEST_CASE("check canonicalises the url and rejects inconsistent specs") {
  std::string why;
  auto ok = check({"http://Host:80/", worker_type::regular, {}, {}, {}, {}}, why);
  REQUIRE(ok);
  CHECK(ok->spec.url == "http://Host:80");
  CHECK_FALSE(check({"http://h:1", worker_type::decode, 8998, {}, {}, {}}, why));
  CHECK(why.find("bootstrap_port") != std::string::npos);
  CHECK_FALSE(check({"nope", worker_type::regular, {}, {}, {}, {}}, why));
  CHECK_FALSE(check({"http://h:1", worker_type::prefill, {}, {}, provider_kind::openai, {}}, why));
}

TEST_CASE("model listings come from /v1/models or /get_model_info") {
  CHECK(models_from_listing(json::parse(R"({"object":"list","data":[{"id":"a"},{"id":"b"}]})")) ==
        std::vector<std::string>{"a", "b"});
  CHECK(models_from_listing(json::parse(R"({"model_path":"meta/llama"})")) ==
        std::vector<std::string>{"meta/llama"});
  CHECK(models_from_listing(json::parse(R"({"data":"x"})")).empty());
  CHECK(models_from_listing(json()).empty());
}
