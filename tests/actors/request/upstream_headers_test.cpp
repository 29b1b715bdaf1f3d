#include "actors/request/upstream_headers.hpp"

#include <catch2/catch.hpp>
#include <map>

using namespace troupe;
using namespace troupe::actors;
namespace http = transport::http;

namespace {

worker_entry worker(protocol::provider_kind provider, std::string api_key = {}) {
  worker_entry w;
  w.id = "w-1";
  w.spec.url = "http://127.0.0.1:1";
  w.spec.provider = provider;
  w.spec.api_key = std::move(api_key);
  return w;
}

transport::request client_request(std::initializer_list<std::pair<std::string, std::string>> h) {
  transport::request req{http::verb::post, "/v1/messages", 11};
  for (auto& [name, value] : h) {
    req.insert(name, value);
  }
  return req;
}

std::map<std::string, std::string> as_map(const transport::header_block& block) {
  std::map<std::string, std::string> out;
  for (auto& [name, value] : block.list()) {
    REQUIRE(out.count(name) == 0); // each header once
    out[name] = value;
  }
  return out;
}

const auto everything = {
    std::pair<std::string, std::string>{"Authorization", "Bearer sk-client"},
    {"x-api-key", "sk-ant-client"},
    {"anthropic-version", "2024-01-01"},
    {"anthropic-beta", "tools-2024"},
    {"traceparent", "00-abc-def-01"},
    {"tracestate", "k=v"},
    {"x-routing-key", "session-1"},
    {"Content-Type", "application/json"},
    {"Connection", "keep-alive, x-hop"},
    {"Keep-Alive", "timeout=5"},
    {"TE", "trailers"},
    {"Upgrade", "h2c"},
    {"Proxy-Authorization", "Basic xyz"},
    {"x-hop", "1"},
    {"Cookie", "a=b"},
    {"x-request-id", "client-id"},
};

} // namespace

TEST_CASE("an Anthropic provider gets only its credentials, versions and the request id") {
  auto h = as_map(upstream_headers(client_request(everything),
                                   worker(protocol::provider_kind::anthropic), "rid"));
  CHECK(h == std::map<std::string, std::string>{{"x-api-key", "sk-ant-client"},
                                                {"anthropic-version", "2024-01-01"},
                                                {"anthropic-beta", "tools-2024"},
                                                {"x-request-id", "rid"}});
}

TEST_CASE("a Bearer key goes to Anthropic as x-api-key, with the default version") {
  auto h = as_map(upstream_headers(client_request({{"Authorization", "Bearer sk-ant-1"}}),
                                   worker(protocol::provider_kind::anthropic), "rid"));
  CHECK(h == std::map<std::string, std::string>{{"x-api-key", "sk-ant-1"},
                                                {"anthropic-version", "2023-06-01"},
                                                {"x-request-id", "rid"}});
}

TEST_CASE("several anthropic-beta headers are joined") {
  auto h =
      as_map(upstream_headers(client_request({{"anthropic-beta", "a"}, {"anthropic-beta", "b"}}),
                              worker(protocol::provider_kind::anthropic), "rid"));
  CHECK(h["anthropic-beta"] == "a,b");
}

TEST_CASE("a worker's own key replaces the client's credentials") {
  auto an = as_map(upstream_headers(client_request(everything),
                                    worker(protocol::provider_kind::anthropic, "sk-own"), "rid"));
  CHECK(an["x-api-key"] == "sk-own");
  CHECK(an.count("authorization") == 0);
  auto oa = as_map(upstream_headers(client_request(everything),
                                    worker(protocol::provider_kind::openai, "sk-own"), "rid"));
  CHECK(oa["authorization"] == "Bearer sk-own");
  CHECK(oa.count("x-api-key") == 0);
}

TEST_CASE("other workers get the allowlist, never hop-by-hop headers") {
  for (auto p : {protocol::provider_kind::none, protocol::provider_kind::openai}) {
    auto h = as_map(upstream_headers(client_request(everything), worker(p), "rid"));
    CHECK(h == std::map<std::string, std::string>{{"authorization", "Bearer sk-client"},
                                                  {"traceparent", "00-abc-def-01"},
                                                  {"tracestate", "k=v"},
                                                  {"x-routing-key", "session-1"},
                                                  {"content-type", "application/json"},
                                                  {"x-request-id", "rid"}});
  }
}

TEST_CASE("the gateway's own key never reaches an external provider") {
  auto req = client_request({{"Authorization", "Bearer gw-key"}, {"x-api-key", "gw-key"}});
  auto an =
      as_map(upstream_headers(req, worker(protocol::provider_kind::anthropic), "rid", "gw-key"));
  CHECK(an.count("x-api-key") == 0);
  CHECK(an.count("authorization") == 0);
  auto oa = as_map(upstream_headers(req, worker(protocol::provider_kind::openai), "rid", "gw-key"));
  CHECK(oa.count("authorization") == 0);
  // A self-hosted worker may share the gateway's key (SGLang --api-key): it is forwarded.
  auto self_hosted =
      as_map(upstream_headers(req, worker(protocol::provider_kind::none), "rid", "gw-key"));
  CHECK(self_hosted["authorization"] == "Bearer gw-key");
}
