#include "apps/troupe-bench/api.hpp"

#include <nlohmann/json.hpp>

namespace troupe::bench {

std::string_view to_string(api_kind a) noexcept {
  switch (a) {
  case api_kind::chat:
    return "chat";
  case api_kind::messages:
    return "messages";
  case api_kind::responses:
    return "responses";
  }
  return "chat";
}

std::optional<api_kind> parse_api(std::string_view name) noexcept {
  for (auto a : {api_kind::chat, api_kind::messages, api_kind::responses}) {
    if (name == to_string(a)) {
      return a;
    }
  }
  return std::nullopt;
}

std::string_view path_of(api_kind a) noexcept {
  switch (a) {
  case api_kind::chat:
    return "/v1/chat/completions";
  case api_kind::messages:
    return "/v1/messages";
  case api_kind::responses:
    return "/v1/responses";
  }
  return "/v1/chat/completions";
}

namespace {

nlohmann::json conversation(const prompt& p) {
  auto out = nlohmann::json::array();
  for (const auto& m : p.messages) {
    out.push_back({{"role", m.role}, {"content", m.content}});
  }
  return out;
}

} // namespace

std::string make_body(api_kind a, const prompt& p, const body_options& o) {
  if (p.body) {
    auto body = *p.body;
    if (!body.contains("model")) {
      body["model"] = o.model;
    }
    if (!body.contains("stream")) {
      body["stream"] = o.stream;
    }
    return body.dump();
  }
  const long max_tokens = p.max_tokens.value_or(o.max_tokens);
  nlohmann::json body = {{"model", o.model}};
  switch (a) {
  case api_kind::chat: {
    auto msgs = nlohmann::json::array();
    if (!p.system.empty()) {
      msgs.push_back({{"role", "system"}, {"content", p.system}});
    }
    for (auto& m : conversation(p)) {
      msgs.push_back(std::move(m));
    }
    body["messages"] = std::move(msgs);
    body["max_tokens"] = max_tokens;
    if (o.stream) {
      // Without it an OpenAI stream carries no usage: the token counts would be guesses.
      body["stream_options"] = {{"include_usage", true}};
    }
    break;
  }
  case api_kind::messages:
    if (!p.system.empty()) {
      body["system"] = p.system;
    }
    body["messages"] = conversation(p);
    body["max_tokens"] = max_tokens;
    break;
  case api_kind::responses:
    if (!p.system.empty()) {
      body["instructions"] = p.system;
    }
    body["input"] = conversation(p);
    body["max_output_tokens"] = max_tokens;
    // A benchmark has no use for stored responses; storing them would grow the server.
    body["store"] = false;
    break;
  }
  body["stream"] = o.stream;
  if (o.ignore_eos) {
    body["ignore_eos"] = true;
  }
  if (o.temperature) {
    body["temperature"] = *o.temperature;
  }
  return body.dump();
}

} // namespace troupe::bench
