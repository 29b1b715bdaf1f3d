#include "apps/troupe-sim/api_common.hpp"

#include <cctype>
#include <chrono>

namespace troupe::sim {

namespace {

nlohmann::json example_value(const nlohmann::json& schema, int depth);

std::string schema_type(const nlohmann::json& schema) {
  const auto it = schema.find("type");
  if (it == schema.end()) {
    return schema.contains("properties") ? "object" : "string";
  }
  if (it->is_string()) {
    return it->get<std::string>();
  }
  if (it->is_array()) {
    for (const auto& t : *it) {
      if (t.is_string() && t.get<std::string>() != "null") {
        return t.get<std::string>();
      }
    }
  }
  return "string";
}

nlohmann::json example_object(const nlohmann::json& schema, int depth) {
  auto out = nlohmann::json::object();
  if (!schema.is_object() || depth > 4) {
    return out;
  }
  const auto props = schema.find("properties");
  if (props == schema.end() || !props->is_object()) {
    return out;
  }
  std::vector<std::string> wanted;
  if (auto req = schema.find("required"); req != schema.end() && req->is_array()) {
    for (const auto& name : *req) {
      if (name.is_string() && props->contains(name.get<std::string>())) {
        wanted.push_back(name.get<std::string>());
      }
    }
  }
  if (wanted.empty()) {
    for (const auto& [name, _] : props->items()) {
      wanted.push_back(name);
    }
  }
  for (const auto& name : wanted) {
    out[name] = example_value((*props)[name], depth + 1);
  }
  return out;
}

nlohmann::json example_value(const nlohmann::json& schema, int depth) {
  if (!schema.is_object()) {
    return "sim";
  }
  if (auto c = schema.find("const"); c != schema.end()) {
    return *c;
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) {
    return e->front();
  }
  const auto type = schema_type(schema);
  if (type == "integer" || type == "number") {
    return 1;
  }
  if (type == "boolean") {
    return true;
  }
  if (type == "array") {
    return nlohmann::json::array();
  }
  if (type == "object") {
    return example_object(schema, depth);
  }
  if (type == "null") {
    return nullptr;
  }
  return "sim";
}

bool room_text(const nlohmann::json& v, std::string& out) {
  if (v.is_number_integer()) {
    out = v.dump();
    return true;
  }
  if (v.is_string()) {
    out = v.get<std::string>();
    if (out.empty() || out.size() > 128) {
      return false;
    }
    for (char c : out) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
        return false;
      }
    }
    return true;
  }
  return false;
}

// Reads element `i` of a bootstrap field: the scalar itself, or the i-th item of a list.
const nlohmann::json* element(const nlohmann::json& field, std::size_t i) {
  if (field.is_array()) {
    return i < field.size() ? &field[i] : nullptr;
  }
  return &field;
}

} // namespace

bool read_token_ids(const nlohmann::json& list, std::vector<token_id>& out) {
  if (!list.is_array()) {
    return false;
  }
  out.reserve(out.size() + list.size());
  for (const auto& id : list) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0) {
      return false;
    }
    out.push_back(static_cast<token_id>(id.get<std::int64_t>()));
  }
  return true;
}

std::string model_of(const nlohmann::json& body, const std::string& fallback) {
  auto it = body.find("model");
  return it != body.end() && it->is_string() ? it->get<std::string>() : fallback;
}

protocol::api_error make_error(protocol::error_code code, std::string message, std::string param) {
  protocol::api_error e;
  e.code = code;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

protocol::api_error bad_request(std::string message, std::string param) {
  return make_error(protocol::error_code::bad_request, std::move(message), std::move(param));
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::size_t> opt_count(const nlohmann::json& body, const char* key,
                                     std::optional<protocol::api_error>& err) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    return std::nullopt;
  }
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
    err = bad_request(std::string("'") + key + "' must be a non-negative integer", key);
    return std::nullopt;
  }
  return it->get<std::size_t>();
}

bool opt_bool(const nlohmann::json& body, const char* key, bool fallback,
              std::optional<protocol::api_error>& err) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    return fallback;
  }
  if (!it->is_boolean()) {
    err = bad_request(std::string("'") + key + "' must be a boolean", key);
    return fallback;
  }
  return it->get<bool>();
}

std::string content_text(const nlohmann::json& content) {
  if (content.is_string()) {
    return content.get<std::string>();
  }
  std::string out;
  if (!content.is_array()) {
    return out;
  }
  for (const auto& part : content) {
    if (part.is_string()) {
      out += (out.empty() ? "" : "\n") + part.get<std::string>();
      continue;
    }
    if (!part.is_object()) {
      continue;
    }
    const auto text = part.find("text");
    if (text != part.end() && text->is_string()) {
      out += (out.empty() ? "" : "\n") + text->get<std::string>();
    } else if (auto inner = part.find("content"); inner != part.end()) {
      // tool_result blocks carry their own content
      auto nested = content_text(*inner);
      if (!nested.empty()) {
        out += (out.empty() ? "" : "\n") + nested;
      }
    }
  }
  return out;
}

std::string make_id(std::string_view prefix, std::mt19937_64& rng) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string id(prefix);
  id.reserve(prefix.size() + 24);
  for (int word = 0; word < 2; ++word) {
    auto bits = rng();
    for (int i = 0; i < 12; ++i, bits >>= 4) {
      id.push_back(hex[bits & 0xf]);
    }
  }
  return id;
}

std::int64_t unix_now() noexcept {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double unix_now_precise() noexcept {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json example_arguments(const nlohmann::json& schema) {
  return example_object(schema, 0);
}

std::variant<std::vector<bootstrap_info>, protocol::api_error>
parse_bootstrap(const nlohmann::json& body, std::size_t count, bool batch) {
  const auto host = body.find("bootstrap_host");
  const auto port = body.find("bootstrap_port");
  const auto room = body.find("bootstrap_room");
  const auto none = body.end();
  if (host == none && port == none && room == none) {
    return std::vector<bootstrap_info>{};
  }
  for (auto it : {host, port, room}) {
    if (it != none && it->is_array() && (!batch || it->size() != count)) {
      return bad_request("'" + it.key() + "' must have one element per prompt", it.key());
    }
  }
  std::vector<bootstrap_info> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    auto& info = out[i];
    if (host != none) {
      const auto* h = element(*host, i);
      if (h && h->is_string()) {
        info.host = h->get<std::string>();
      } else if (h && !h->is_null()) {
        return bad_request("'bootstrap_host' must be a string", "bootstrap_host");
      }
    }
    if (port != none) {
      const auto* p = element(*port, i);
      if (p && p->is_number_integer() && p->get<std::int64_t>() > 0 &&
          p->get<std::int64_t>() < 65536) {
        info.port = static_cast<std::uint16_t>(p->get<std::int64_t>());
      } else if (p && !p->is_null()) {
        return bad_request("'bootstrap_port' must be a port number or null", "bootstrap_port");
      }
    }
    if (room != none) {
      const auto* r = element(*room, i);
      std::string text;
      if (r && room_text(*r, text)) {
        info.room = std::move(text);
      } else if (r && !r->is_null()) {
        return bad_request("'bootstrap_room' must be an integer", "bootstrap_room");
      }
    }
  }
  return out;
}

std::variant<std::optional<kv_params>, protocol::api_error>
parse_kv_transfer_params(const nlohmann::json& body) {
  constexpr std::string_view field = "kv_transfer_params";
  const auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    return std::optional<kv_params>{};
  }
  if (!it->is_object()) {
    return bad_request("'kv_transfer_params' must be an object", std::string(field));
  }
  const auto& j = *it;
  kv_params kv;
  auto wrong = [](std::string_view key, std::string_view what) {
    return bad_request("'kv_transfer_params." + std::string(key) + "' must be " + std::string(what),
                       "kv_transfer_params");
  };
  for (auto [key, out] : {std::pair{"do_remote_decode", &kv.do_remote_decode},
                          std::pair{"do_remote_prefill", &kv.do_remote_prefill}}) {
    if (auto f = j.find(key); f != j.end() && !f->is_null()) {
      if (!f->is_boolean()) {
        return wrong(key, "a boolean");
      }
      *out = f->get<bool>();
    }
  }
  for (auto [key, out] :
       {std::pair{"remote_engine_id", &kv.remote_engine_id},
        std::pair{"remote_host", &kv.remote_host}, std::pair{"transfer_id", &kv.transfer_id},
        std::pair{"remote_bootstrap_addr", &kv.bootstrap_addr}}) {
    if (auto f = j.find(key); f != j.end() && !f->is_null()) {
      if (!f->is_string()) {
        return wrong(key, "a string");
      }
      *out = f->get<std::string>();
    }
  }
  if (auto f = j.find("remote_port"); f != j.end() && !f->is_null()) {
    if (!f->is_number_integer() || f->get<std::int64_t>() < 1 || f->get<std::int64_t>() > 65535) {
      return wrong("remote_port", "a port number");
    }
    kv.remote_port = static_cast<std::uint16_t>(f->get<std::int64_t>());
  }
  if (auto f = j.find("remote_block_ids"); f != j.end() && !f->is_null()) {
    if (!f->is_array()) {
      return wrong("remote_block_ids", "a list of block ids");
    }
    std::vector<std::uint64_t> ids;
    for (const auto& id : *f) {
      if (!id.is_number_unsigned() && !(id.is_number_integer() && id.get<std::int64_t>() >= 0)) {
        return wrong("remote_block_ids", "a list of block ids");
      }
      ids.push_back(id.get<std::uint64_t>());
    }
    kv.remote_block_ids = std::move(ids);
  }
  return std::optional<kv_params>{std::move(kv)};
}

bool split_host_port(std::string_view addr, std::string& host, std::uint16_t& port) {
  constexpr std::string_view scheme = "http://";
  if (addr.substr(0, scheme.size()) == scheme) {
    addr.remove_prefix(scheme.size());
  }
  const auto colon = addr.rfind(':');
  const auto digits = colon == std::string_view::npos ? std::string_view{} : addr.substr(colon + 1);
  if (colon == 0 || digits.empty() || digits.size() > 5) {
    return false;
  }
  unsigned value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > 65535) {
    return false;
  }
  host = std::string(addr.substr(0, colon));
  port = static_cast<std::uint16_t>(value);
  return true;
}

const tool_def* choose_tool(const std::vector<tool_def>& tools, tool_mode mode,
                            std::string_view named, std::string_view last_user_text) {
  if (tools.empty() || mode == tool_mode::none) {
    return nullptr;
  }
  if (mode == tool_mode::named) {
    for (const auto& t : tools) {
      if (t.name == named) {
        return &t;
      }
    }
    return nullptr;
  }
  for (const auto& t : tools) {
    if (!t.name.empty() && last_user_text.find(t.name) != std::string_view::npos) {
      return &t;
    }
  }
  return mode == tool_mode::required ? &tools.front() : nullptr;
}

nlohmann::json openai_finish(finish_reason f) {
  switch (f) {
  case finish_reason::stop:
    return "stop";
  case finish_reason::length:
    return "length";
  case finish_reason::tool:
    return "tool_calls";
  case finish_reason::none:
    break;
  }
  return nullptr;
}

nlohmann::json openai_usage(const gen_state& st) {
  const auto prompt = st.prompt_tokens();
  const auto completion = st.completion_tokens();
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", st.cached_tokens()}}}};
}

} // namespace troupe::sim
