#include "protocol/worker.hpp"

#include <cctype>
#include <nlohmann/json.hpp>

namespace troupe::protocol {

namespace {

/// Equal ignoring ASCII case (smg parses engine names so).
bool same_name(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

} // namespace

std::string_view to_string(engine_runtime r) noexcept {
  return r == engine_runtime::vllm ? "vllm" : "sglang";
}

std::string_view to_string(kv_connector c) noexcept {
  switch (c) {
  case kv_connector::unset:
    return "unset";
  case kv_connector::nixl:
    return "NixlConnector";
  case kv_connector::mooncake:
    return "MooncakeConnector";
  case kv_connector::passthrough:
    return "passthrough";
  }
  return "unset";
}

std::optional<engine_runtime> parse_runtime(std::string_view s) noexcept {
  if (same_name(s, "sglang")) {
    return engine_runtime::sglang;
  }
  if (same_name(s, "vllm")) {
    return engine_runtime::vllm;
  }
  return std::nullopt;
}

std::optional<kv_connector> parse_kv_connector(std::string_view s) noexcept {
  if (same_name(s, "NixlConnector") || same_name(s, "nixl")) {
    return kv_connector::nixl;
  }
  if (same_name(s, "MooncakeConnector") || same_name(s, "mooncake")) {
    return kv_connector::mooncake;
  }
  if (same_name(s, "passthrough")) {
    return kv_connector::passthrough;
  }
  return std::nullopt;
}

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
  if (spec.provider != provider_kind::none &&
      (spec.runtime || spec.connector != kv_connector::unset || !spec.kv_engine_id.empty())) {
    why = "runtime and kv_connector are for self-hosted engines, not external providers";
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
    } else if (key == "runtime" || key == "runtime_type") { // smg: runtime_type, alias runtime
      if (value.is_null()) {
        continue;
      }
      std::string s;
      if (!want_string(s)) {
        return std::nullopt;
      }
      if (same_name(s, "unspecified")) {
        continue; // smg's "detect it"
      }
      auto r = parse_runtime(s);
      if (!r) {
        why = key + " must be sglang or vllm, got '" + s + "'";
        return std::nullopt;
      }
      spec.runtime = *r;
    } else if (key == "kv_connector" || key == "kv_engine_id" || key == "labels") {
      // smg takes the KV config from its own fields or from labels of the same names.
      auto read_kv = [&](const std::string& name, const nlohmann::json& v) {
        if (v.is_null()) {
          return true;
        }
        if (!v.is_string()) {
          why = "'" + name + "' must be a string";
          return false;
        }
        auto text = v.get<std::string>();
        if (name == "kv_engine_id") {
          spec.kv_engine_id = text;
          return true;
        }
        if (text.empty()) {
          return true;
        }
        auto c = parse_kv_connector(text);
        if (!c) {
          why = "kv_connector must be NixlConnector, MooncakeConnector or passthrough, got '" +
                text + "'";
          return false;
        }
        spec.connector = *c;
        return true;
      };
      if (key != "labels") {
        if (!read_kv(key, value)) {
          return std::nullopt;
        }
        continue;
      }
      if (!value.is_object()) {
        why = "'labels' must be an object of strings";
        return std::nullopt;
      }
      for (auto& [label, v] : value.items()) {
        if (label == "kv_connector" || label == "kv_engine_id") {
          if (!read_kv(label, v)) {
            return std::nullopt;
          }
        } else if (!v.is_string()) {
          why = "label '" + label + "' must be a string";
          return std::nullopt;
        } // other labels are accepted (smg's) and not used
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
