#include "apps/troupe-sim/api_common.hpp"

#include <catch2/catch.hpp>

using namespace troupe::sim;
using nlohmann::json;

TEST_CASE("content_text reads strings and text parts", "[api_common]") {
  CHECK(content_text("hi") == "hi");
  CHECK(content_text(json::array({{{"type", "text"}, {"text", "a"}},
                                  {{"type", "image_url"}, {"image_url", "x"}},
                                  {{"type", "input_text"}, {"text", "b"}}})) == "a\nb");
  CHECK(content_text(json::array({{{"type", "tool_result"}, {"content", "r"}}})) == "r");
  CHECK(content_text(nullptr).empty());
}

TEST_CASE("example arguments follow the schema", "[api_common]") {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"city", {{"type", "string"}}},
                   {"days", {{"type", "integer"}}},
                   {"unit", {{"type", "string"}, {"enum", {"celsius", "fahrenheit"}}}},
                   {"verbose", {{"type", "boolean"}}}}},
                 {"required", {"city", "unit"}}};
  auto args = example_arguments(schema);
  CHECK(args == json{{"city", "sim"}, {"unit", "celsius"}});
  json open = {{"type", "object"}, {"properties", {{"n", {{"type", "number"}}}}}};
  CHECK(example_arguments(open) == json{{"n", 1}});
  CHECK(example_arguments(nullptr) == json::object());
}

TEST_CASE("tool choice: named, required, automatic on mention, none", "[api_common]") {
  std::vector<tool_def> tools{{"get_weather", {}}, {"get_time", {}}};
  CHECK(choose_tool(tools, tool_mode::named, "get_time", "")->name == "get_time");
  CHECK(choose_tool(tools, tool_mode::named, "nope", "") == nullptr);
  CHECK(choose_tool(tools, tool_mode::required, "", "hello")->name == "get_weather");
  CHECK(choose_tool(tools, tool_mode::required, "", "use get_time")->name == "get_time");
  CHECK(choose_tool(tools, tool_mode::automatic, "", "hello") == nullptr);
  CHECK(choose_tool(tools, tool_mode::automatic, "", "call get_time please")->name == "get_time");
  CHECK(choose_tool(tools, tool_mode::none, "", "call get_time") == nullptr);
}

TEST_CASE("bootstrap fields: scalars, batches, nulls and errors", "[api_common]") {
  auto none = parse_bootstrap(json::object(), 1, false);
  CHECK(std::get<std::vector<bootstrap_info>>(none).empty());

  auto one = parse_bootstrap(
      {{"bootstrap_host", "10.0.0.1"}, {"bootstrap_port", 8998}, {"bootstrap_room", 42}}, 1, false);
  auto& b = std::get<std::vector<bootstrap_info>>(one);
  REQUIRE(b.size() == 1);
  CHECK(*b[0].host == "10.0.0.1");
  CHECK(*b[0].port == 8998);
  CHECK(*b[0].room == "42");

  auto batch = parse_bootstrap({{"bootstrap_host", {"a", "b"}},
                                {"bootstrap_port", {1, nullptr}},
                                {"bootstrap_room", {7, 8}}},
                               2, true);
  auto& bb = std::get<std::vector<bootstrap_info>>(batch);
  REQUIRE(bb.size() == 2);
  CHECK(*bb[1].host == "b");
  CHECK_FALSE(bb[1].port.has_value());
  CHECK(*bb[1].room == "8");

  CHECK(std::holds_alternative<troupe::protocol::api_error>(
      parse_bootstrap({{"bootstrap_room", {1, 2, 3}}}, 2, true)));
  CHECK(std::holds_alternative<troupe::protocol::api_error>(
      parse_bootstrap({{"bootstrap_room", "a/b"}}, 1, false)));
  CHECK(std::holds_alternative<troupe::protocol::api_error>(
      parse_bootstrap({{"bootstrap_port", 70000}}, 1, false)));
}

TEST_CASE("optional fields are validated", "[api_common]") {
  std::optional<troupe::protocol::api_error> err;
  CHECK(opt_count({{"n", 3}}, "n", err) == 3u);
  CHECK_FALSE(opt_count({{"n", nullptr}}, "n", err).has_value());
  CHECK_FALSE(err.has_value());
  opt_count({{"n", -1}}, "n", err);
  REQUIRE(err.has_value());
  CHECK(err->param == "n");
  err.reset();
  CHECK(opt_bool({{"stream", true}}, "stream", false, err));
  opt_bool({{"stream", "yes"}}, "stream", false, err);
  CHECK(err.has_value());
}

TEST_CASE("ids have their prefix and differ", "[api_common]") {
  std::mt19937_64 rng{1};
  auto a = make_id("chatcmpl-", rng);
  auto b = make_id("chatcmpl-", rng);
  CHECK(a.rfind("chatcmpl-", 0) == 0);
  CHECK(a.size() == 9 + 24);
  CHECK(a != b);
}

TEST_CASE("kv_transfer_params: vLLM's fields, nulls, unknown fields and errors", "[api_common]") {
  auto none = parse_kv_transfer_params(json::object());
  REQUIRE(std::holds_alternative<std::optional<kv_params>>(none));
  CHECK_FALSE(std::get<std::optional<kv_params>>(none).has_value());

  // The prefill leg of vLLM's proxy: remote fields null.
  auto prefill = parse_kv_transfer_params({{"kv_transfer_params",
                                            {{"do_remote_decode", true},
                                             {"do_remote_prefill", false},
                                             {"remote_engine_id", nullptr},
                                             {"remote_block_ids", nullptr},
                                             {"remote_host", nullptr},
                                             {"remote_port", nullptr}}}});
  const auto& p = std::get<std::optional<kv_params>>(prefill);
  REQUIRE(p.has_value());
  CHECK(p->do_remote_decode);
  CHECK_FALSE(p->remote_block_ids.has_value());

  auto decode = parse_kv_transfer_params({{"kv_transfer_params",
                                           {{"do_remote_prefill", true},
                                            {"remote_engine_id", "e"},
                                            {"remote_block_ids", {1, 2}},
                                            {"remote_host", "h"},
                                            {"remote_port", 5600},
                                            {"tp_size", 1}}}});
  const auto& d = std::get<std::optional<kv_params>>(decode);
  REQUIRE(d.has_value());
  CHECK(*d->remote_block_ids == std::vector<std::uint64_t>{1, 2});
  CHECK(*d->remote_port == 5600);

  for (const auto& bad :
       {json{{"kv_transfer_params", "x"}}, json{{"kv_transfer_params", {{"remote_port", 0}}}},
        json{{"kv_transfer_params", {{"remote_block_ids", {-1}}}}},
        json{{"kv_transfer_params", {{"do_remote_prefill", "yes"}}}}}) {
    CHECK(std::holds_alternative<troupe::protocol::api_error>(parse_kv_transfer_params(bad)));
  }
}

TEST_CASE("host and port of a bootstrap address", "[api_common]") {
  std::string host;
  std::uint16_t port = 0;
  REQUIRE(split_host_port("http://10.0.0.1:8998", host, port));
  CHECK(host == "10.0.0.1");
  CHECK(port == 8998);
  CHECK(split_host_port("h:1", host, port));
  CHECK_FALSE(split_host_port("http://h", host, port));
  CHECK_FALSE(split_host_port("h:0", host, port));
  CHECK_FALSE(split_host_port("h:99999", host, port));
  CHECK_FALSE(split_host_port(":80", host, port));
}
