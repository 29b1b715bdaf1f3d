#include "protocol/kv_transfer.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;
using json = nlohmann::ordered_json;

TEST_CASE("the prefill leg: one unstreamed token in the route's cap field, tagged") {
  auto chat = json::parse(R"({"model":"m","messages":[],"max_tokens":9,"stream":true,
      "stream_options":{"include_usage":true},"n":1,"min_tokens":2,"temperature":0})");
  make_prefill_leg(chat, operation::chat_completions, prefill_params(kv_connector::unset, ""));
  CHECK(chat.dump() == R"({"model":"m","messages":[],"max_tokens":1,"stream":false,"n":1,)"
                       R"("temperature":0,"kv_transfer_params":{"do_remote_decode":true,)"
                       R"("do_remote_prefill":false}})");
  auto completion = json::parse(R"({"max_completion_tokens":9,"max_tokens":8})");
  make_prefill_leg(completion, operation::chat_completions, nullptr);
  CHECK(completion.dump() == R"({"max_completion_tokens":1,"stream":false})");
  auto responses = json::parse(R"({"input":"x","max_output_tokens":50})");
  make_prefill_leg(responses, operation::responses_create, nullptr);
  CHECK(responses["max_output_tokens"] == 1);
  CHECK_FALSE(responses.contains("max_tokens"));
  auto messages = json::parse(R"({"max_tokens":50})");
  make_prefill_leg(messages, operation::messages, prefill_params(kv_connector::passthrough, ""));
  CHECK(messages.dump() == R"({"max_tokens":1,"stream":false})");
}

TEST_CASE("connector params: NIXL tags, Mooncake mints and synthesizes, passthrough tags none") {
  CHECK(prefill_params(kv_connector::nixl, "").dump() ==
        R"({"do_remote_decode":true,"do_remote_prefill":false})");
  CHECK(prefill_params(kv_connector::mooncake, "xfer-1").dump() ==
        R"({"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"xfer-1"})");
  CHECK(prefill_params(kv_connector::passthrough, "").is_null());
  CHECK(mooncake_decode_params("xfer-1", "eng", "10.0.0.1", 8998).dump() ==
        R"({"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":"xfer-1",)"
        R"("remote_engine_id":"eng","remote_bootstrap_addr":"http://10.0.0.1:8998"})");
  CHECK(mooncake_decode_params("x", "e", "::1", 1)["remote_bootstrap_addr"] == "http://[::1]:1");
  auto id = transfer_id(1, 2);
  CHECK(id == "xfer-00000000000000010000000000000002");
}

TEST_CASE("the params a prefill answer names, kept as they are") {
  auto p = harvest_params(R"({"id":"c","kv_transfer_params":{"remote_engine_id":"e",)"
                          R"("remote_block_ids":[1,2],"tp_size":1}})");
  REQUIRE(p);
  CHECK(p->dump() == R"({"remote_engine_id":"e","remote_block_ids":[1,2],"tp_size":1})");
  CHECK_FALSE(harvest_params(R"({"kv_transfer_params":null})"));
  CHECK_FALSE(harvest_params("not json"));
  CHECK_FALSE(harvest_params(R"([1])"));
}

TEST_CASE("names of runtimes and connectors, smg's spellings") {
  CHECK(parse_runtime("vLLM") == engine_runtime::vllm);
  CHECK(parse_runtime("SGLang") == engine_runtime::sglang);
  CHECK_FALSE(parse_runtime("trtllm"));
  CHECK(parse_kv_connector("nixlconnector") == kv_connector::nixl);
  CHECK(parse_kv_connector("mooncake") == kv_connector::mooncake);
  CHECK(parse_kv_connector("passthrough") == kv_connector::passthrough);
  CHECK(effective(kv_connector::unset) == kv_connector::nixl);
  CHECK(vllm_serves_in_sequence(operation::messages));
  CHECK_FALSE(vllm_serves_in_sequence(operation::generate));
  CHECK(sampling_n(json::parse(R"({"n":3})")) == 3);
  CHECK(sampling_n(json::object()) == 1);
}
