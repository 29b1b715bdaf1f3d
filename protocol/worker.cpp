#include "protocol/worker.hpp"

#include <nlohmann/json.hpp>

namespace troupe::protocol {

std::string_view to_string(worker_type t) noexcept {
  switch (t) {
  case worker_type::regular:
    return "regular";
  case worker_type::prefill:
    return "prefill";
  case worker_type::decode:
    return "decode";
  }
  return "regular";
}

std::string_view to_string(provider_kind p) noexcept {
  switch (p) {
  case provider_kind::none:
    return "none";
  case provider_kind::openai:
    return "openai";
  case provider_kind::anthropic:
    return "anthropic";
  }
  return "none";
}

std::optional<worker_type> parse_worker_type(std::string_view s) noexcept {
  if (s == "regular") {
    return worker_type::regular;
  }
  if (s == "prefill") {
    return worker_type::prefill;
  }
  if (s == "decode") {
    return worker_type::decode;
  }
  return std::nullopt;
}

std::optional<provider_kind> parse_provider(std::string_view s) noexcept {
  if (s.empty() || s == "none") {
    return provider_kind::none;
  }
  if (s == "openai") {
    return provider_kind::openai;
  }
  if (s == "anthropic") {
    return provider_kind::anthropic;
  }
  return std::nullopt;
}

std::optional<checked_spec> check(worker_spec spec, std::string& why) {
  auto url = parse_base_url(spec.url, why);
  if (!url) {
    why = "invalid url '" + spec.url + "': " + why;
    return std::nullopt;
  }
  if (spec.bootstrap_port && spec.type != worker_type::prefill) {
    why = "bootstrap_port is only valid for prefill workers";
    return std::nullopt;
  }
  if (spec.bootstrap_port && *spec.bootstrap_port == 0) {
    why = "bootstrap_port must be between 1 and 65535";
    return std::nullopt;
  }
  if (spec.provider != provider_kind::none && spec.type != worker_type::regular) {
    why = "an external provider can only be a regular worker";
    return std::nullopt;
  }
  if (spec.model_id && spec.model_id->empty()) {
    why = "model_id must not be empty";
    return std::nullopt;
  }
  spec.url = url->canonical();
  return checked_spec{std::move(spec), std::move(*url)};
}

std::optional<worker_spec> worker_spec_from_json(const nlohmann::json& body, std::string& why) {
  if (!body.is_object()) {
    why = "the body must be a JSON object";
    return std::nullopt;
  }
  worker_spec spec;
  bool has_url = false;
  for (auto& item : body.items()) {
    // Named references, not a structured binding: clang 14 (the fuzz build) cannot capture one.
    const auto& key = item.key();
    const auto& value = item.value();
    auto want_string = [&](std::string& out) {
      if (!value.is_string()) {
        why = "'" + key + "' must be a string";
        return false;
      }
      out = value.get<std::string>();
      return true;
    };
    if (key == "url") {
      if (!want_string(spec.url)) {
        return std::nullopt;
      }
      has_url = true;
    } else if (key == "worker_type") {
      std::string s;
      if (!want_string(s)) {
        return std::nullopt;
      }
      auto t = parse_worker_type(s);
      if (!t) {
        why = "worker_type must be regular, prefill or decode, got '" + s + "'";
        return std::nullopt;
      }
      spec.type = *t;
    } else if (key == "bootstrap_port") {
      if (value.is_null()) {
        continue;
      }
      if (!value.is_number_integer() || value.get<long long>() < 1 ||
          value.get<long long>() > 65535) {
        why = "bootstrap_port must be an integer between 1 and 65535 or null";
        return std::nullopt;
      }
      spec.bootstrap_port = static_cast<std::uint16_t>(value.get<long long>());
    } else if (key == "model_id") {
      if (value.is_null()) {
        continue;
      }
      std::string s;
      if (!want_string(s)) {
        return std::nullopt;
      }
      spec.model_id = std::move(s);
    } else if (key == "provider") {
      if (value.is_null()) {
        continue;
      }
      std::string s;
      if (!want_string(s)) {
        return std::nullopt;
      }
      auto p = parse_provider(s);
      if (!p) {
        why = "provider must be openai or anthropic, got '" + s + "'";
        return std::nullopt;
      }
      spec.provider = *p;
    } else if (key == "api_key") {
      if (value.is_null()) {
        continue;
      }
      if (!want_string(spec.api_key)) {
        return std::nullopt;
      }
    } else {
      why = "unknown field '" + key + "'";
      return std::nullopt;
    }
  }
  if (!has_url) {
    why = "'url' is required";
    return std::nullopt;
  }
  return spec;
}

std::vector<std::string> models_from_listing(const nlohmann::json& body) {
  std::vector<std::string> out;
  if (!body.is_object()) {
    return out;
  }
  if (auto it = body.find("data"); it != body.end() && it->is_array()) {
    for (auto& m : *it) {
      if (m.is_object() && m.contains("id") && m["id"].is_string()) {
        out.push_back(m["id"].get<std::string>());
      }
    }
  } else if (auto mp = body.find("model_path"); mp != body.end() && mp->is_string()) {
    out.push_back(mp->get<std::string>());
  }
  return out;
}

} // namespace troupe::protocol
