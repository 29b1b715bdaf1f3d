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
  auto ok = check({"http://Host:80/", worker_type::regular, {}, {}, {}, {}, {}, {}, {}}, why);
  REQUIRE(ok);
  CHECK(ok->spec.url == "http://Host:80");
  CHECK_FALSE(check({"http://h:1", worker_type::decode, 8998, {}, {}, {}, {}, {}, {}}, why));
  CHECK(why.find("bootstrap_port") != std::string::npos);
  CHECK_FALSE(check({"nope", worker_type::regular, {}, {}, {}, {}, {}, {}, {}}, why));
  CHECK_FALSE(check(
      {"http://h:1", worker_type::prefill, {}, {}, provider_kind::openai, {}, {}, {}, {}}, why));
}

TEST_CASE("model listings come from /v1/models or /get_model_info") {
  CHECK(models_from_listing(json::parse(R"({"object":"list","data":[{"id":"a"},{"id":"b"}]})")) ==
        std::vector<std::string>{"a", "b"});
  CHECK(models_from_listing(json::parse(R"({"model_path":"meta/llama"})")) ==
        std::vector<std::string>{"meta/llama"});
  CHECK(models_from_listing(json::parse(R"({"data":"x"})")).empty());
  CHECK(models_from_listing(json()).empty());
}

TEST_CASE("a worker's runtime and KV connector: ours and smg's spellings, labels, errors") {
  std::string why;
  auto vllm = worker_spec_from_json(json{{"url", "http://h:1"},
                                         {"worker_type", "prefill"},
                                         {"runtime", "vllm"},
                                         {"kv_connector", "MooncakeConnector"},
                                         {"kv_engine_id", "eng-0"}},
                                    why);
  REQUIRE(vllm);
  CHECK(vllm->runtime == engine_runtime::vllm);
  CHECK(vllm->connector == kv_connector::mooncake);
  CHECK(vllm->kv_engine_id == "eng-0");
  auto smg = worker_spec_from_json(
      json{{"url", "http://h:1"},
           {"runtime_type", "VLLM"},
           {"labels", {{"kv_connector", "NixlConnector"}, {"kv_engine_id", "e"}, {"zone", "a"}}}},
      why);
  REQUIRE(smg);
  CHECK(smg->runtime == engine_runtime::vllm);
  CHECK(smg->connector == kv_connector::nixl);
  CHECK(smg->kv_engine_id == "e");
  auto unset = worker_spec_from_json(json{{"url", "http://h:1"}, {"runtime", "unspecified"}}, why);
  REQUIRE(unset);
  CHECK_FALSE(unset->runtime);
  CHECK_FALSE(worker_spec_from_json(json{{"url", "http://h:1"}, {"runtime", "trtllm"}}, why));
  CHECK(why.find("sglang or vllm") != std::string::npos);
  CHECK_FALSE(worker_spec_from_json(json{{"url", "http://h:1"}, {"kv_connector", "Foo"}}, why));
  CHECK_FALSE(worker_spec_from_json(json{{"url", "http://h:1"}, {"labels", {{"x", 1}}}}, why));
  worker_spec provider{"https://api.openai.com",
                       worker_type::regular,
                       {},
                       {},
                       provider_kind::openai,
                       "k",
                       {},
                       {},
                       {}};
  provider.runtime = engine_runtime::vllm;
  CHECK_FALSE(check(provider, why));
}
