#include "apps/troupe-bench/response_scan.hpp"

#include <nlohmann/json.hpp>

namespace troupe::bench {

void usage::merge(const usage& other) noexcept {
  if (other.prompt_tokens >= 0) {
    prompt_tokens = other.prompt_tokens;
  }
  if (other.cached_tokens >= 0) {
    cached_tokens = other.cached_tokens;
  }
  if (other.output_tokens >= 0) {
    output_tokens = other.output_tokens;
  }
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) {
    s.remove_suffix(1);
  }
  return s;
}

// The `event:` name and the first `data:` line's value (the only one our APIs send).
struct fields {
  std::string_view event;
  std::string_view data;
};

fields split(std::string_view raw) {
  fields f;
  while (!raw.empty()) {
    auto nl = raw.find('\n');
    auto line = raw.substr(0, nl);
    raw = nl == std::string_view::npos ? std::string_view{} : raw.substr(nl + 1);
    if (line.starts_with("event:")) {
      f.event = trim(line.substr(6));
    } else if (line.starts_with("data:") && f.data.empty()) {
      f.data = trim(line.substr(5));
    }
  }
  return f;
}

// The value of the first `"type":"..."` in `data` (events without an `event:` line).
std::string_view type_field(std::string_view data) {
  constexpr std::string_view key = "\"type\":\"";
  auto at = data.find(key);
  if (at == std::string_view::npos) {
    return {};
  }
  auto from = at + key.size();
  auto end = data.find('"', from);
  return end == std::string_view::npos ? std::string_view{} : data.substr(from, end - from);
}

// True when `"name":"` is followed by a non-empty string value somewhere in `data`.
bool has_text(std::string_view data, std::string_view quoted_key) {
  for (auto at = data.find(quoted_key); at != std::string_view::npos;
       at = data.find(quoted_key, at + 1)) {
    auto v = at + quoted_key.size();
    if (v < data.size() && data[v] != '"') {
      return true;
    }
  }
  return false;
}

long count(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) {
    return -1;
  }
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<long>() : -1;
}

// OpenAI chat usage: prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens.
usage chat_usage(const nlohmann::json& u) {
  usage out;
  out.prompt_tokens = count(u, "prompt_tokens");
  out.output_tokens = count(u, "completion_tokens");
  if (u.is_object() && u.contains("prompt_tokens_details")) {
    out.cached_tokens = count(u["prompt_tokens_details"], "cached_tokens");
  }
  return out;
}

// Anthropic usage: input_tokens excludes what the cache read or wrote.
usage messages_usage(const nlohmann::json& u) {
  usage out;
  const long input = count(u, "input_tokens");
  const long read = count(u, "cache_read_input_tokens");
  const long created = count(u, "cache_creation_input_tokens");
  if (input >= 0) {
    out.prompt_tokens = input + std::max(read, 0L) + std::max(created, 0L);
  }
  out.cached_tokens = read;
  out.output_tokens = count(u, "output_tokens");
  return out;
}

// Responses usage: input_tokens, output_tokens, input_tokens_details.cached_tokens.
usage responses_usage(const nlohmann::json& u) {
  usage out;
  out.prompt_tokens = count(u, "input_tokens");
  out.output_tokens = count(u, "output_tokens");
  if (u.is_object() && u.contains("input_tokens_details")) {
    out.cached_tokens = count(u["input_tokens_details"], "cached_tokens");
  }
  return out;
}

nlohmann::json parse(std::string_view data) {
  return nlohmann::json::parse(data.begin(), data.end(), nullptr, false);
}

event_info chat_event(std::string_view data) {
  event_info e;
  if (data == "[DONE]") {
    e.kind = event_kind::done;
    return e;
  }
  if (data.starts_with("{\"error\"")) {
    e.kind = event_kind::error;
    return e;
  }
  if (has_text(data, "\"content\":\"") || has_text(data, "\"reasoning_content\":\"") ||
      has_text(data, "\"arguments\":\"")) {
    e.kind = event_kind::token;
  }
  if (data.find("\"usage\":{") != std::string_view::npos) {
    auto j = parse(data);
    if (j.is_object() && j.contains("usage")) {
      e.counts = chat_usage(j["usage"]);
    }
  }
  return e;
}

event_info messages_event(std::string_view name, std::string_view data) {
  event_info e;
  if (name == "content_block_delta") {
    e.kind = event_kind::token;
  } else if (name == "message_stop") {
    e.kind = event_kind::done;
  } else if (name == "error") {
    e.kind = event_kind::error;
  } else if (name == "message_start") {
    auto j = parse(data);
    if (j.is_object() && j.contains("message") && j["message"].is_object()) {
      e.counts = messages_usage(j["message"].value("usage", nlohmann::json::object()));
      // message_start's output count is a placeholder; message_delta carries the real one.
      e.counts.output_tokens = -1;
    }
  } else if (name == "message_delta") {
    auto j = parse(data);
    if (j.is_object() && j.contains("usage")) {
      auto u = messages_usage(j["usage"]);
      e.counts.output_tokens = u.output_tokens;
    }
  }
  return e;
}

event_info responses_event(std::string_view name, std::string_view data) {
  event_info e;
  if (name.ends_with(".delta")) {
    e.kind = event_kind::token;
  } else if (name == "response.completed" || name == "response.incomplete") {
    e.kind = event_kind::done;
    auto j = parse(data);
    if (j.is_object() && j.contains("response") && j["response"].is_object()) {
      e.counts = responses_usage(j["response"].value("usage", nlohmann::json::object()));
    }
  } else if (name == "error" || name == "response.failed") {
    e.kind = event_kind::error;
  }
  return e;
}

} // namespace

event_info read_event(api_kind a, std::string_view raw) {
  auto f = split(raw);
  if (a == api_kind::chat) {
    return chat_event(f.data);
  }
  auto name = f.event.empty() ? type_field(f.data) : f.event;
  return a == api_kind::messages ? messages_event(name, f.data) : responses_event(name, f.data);
}

namespace {

std::string_view skip_space(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  return s;
}

// The object value of the first `"key":` in `json` (a view of its text), or empty. Strings
// are skipped with their escapes, so braces inside text do not count.
std::string_view object_at(std::string_view json, std::string_view quoted_key) {
  auto at = json.find(quoted_key);
  if (at == std::string_view::npos) {
    return {};
  }
  auto rest = skip_space(json.substr(at + quoted_key.size()));
  if (rest.empty() || rest.front() != ':') {
    return {};
  }
  rest = skip_space(rest.substr(1));
  if (rest.empty() || rest.front() != '{') {
    return {};
  }
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    char c = rest[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return rest.substr(0, i + 1);
    }
  }
  return {};
}

} // namespace

bool read_body(api_kind a, std::string_view body, usage& counts, std::string& why) {
  // Only the usage object is parsed: a whole DOM of every response would cost the load
  // generator more than the gateway it measures spends on the request.
  auto b = skip_space(body);
  while (!b.empty() && (b.back() == ' ' || b.back() == '\n' || b.back() == '\r')) {
    b.remove_suffix(1);
  }
  if (b.size() < 2 || b.front() != '{' || b.back() != '}') {
    why = "the response body is not a JSON object";
    return false;
  }
  auto inner = skip_space(b.substr(1));
  if (object_at(b, "\"error\"").size() > 0 || inner.starts_with("\"type\":\"error\"")) {
    why = "the response is an error";
    return false;
  }
  auto text = object_at(b, "\"usage\"");
  auto u = text.empty() ? nlohmann::json::object() : parse(text);
  switch (a) {
  case api_kind::chat:
    counts = chat_usage(u);
    break;
  case api_kind::messages:
    counts = messages_usage(u);
    break;
  case api_kind::responses:
    counts = responses_usage(u);
    break;
  }
  return true;
}

} // namespace troupe::bench
