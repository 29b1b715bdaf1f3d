#include "protocol/upstream_error.hpp"

#include <nlohmann/json.hpp>

namespace troupe::protocol {

namespace {

using json = nlohmann::json;

/// Length of the UTF-8 sequence a lead byte announces; 1 for a malformed lead.
std::size_t sequence_length(unsigned char lead) noexcept {
  if (lead < 0x80) {
    return 1;
  }
  if ((lead & 0xE0) == 0xC0) {
    return 2;
  }
  if ((lead & 0xF0) == 0xE0) {
    return 3;
  }
  if ((lead & 0xF8) == 0xF0) {
    return 4;
  }
  return 1; // a continuation byte or 0xF8..0xFF where a lead is expected
}

bool is_continuation(unsigned char c) noexcept {
  return (c & 0xC0) == 0x80;
}

} // namespace

std::string_view utf8_prefix(std::string_view text, std::size_t max) noexcept {
  // Walk whole sequences from the start: the result never ends inside one, even when `text`
  // holds malformed bytes or was itself cut inside its last character.
  std::size_t i = 0;
  while (i < text.size()) {
    auto n = sequence_length(static_cast<unsigned char>(text[i]));
    std::size_t k = 1;
    while (k < n && i + k < text.size() &&
           is_continuation(static_cast<unsigned char>(text[i + k]))) {
      ++k;
    }
    if (k < n) {
      if (i + k == text.size()) {
        break; // the text ends inside this character: leave it out
      }
      n = 1; // a malformed sequence: its lead counts alone
    }
    if (i + n > max) {
      break;
    }
    i += n;
  }
  return text.substr(0, i);
}

bool is_error_body(std::string_view body, api_format format) {
  auto j = json::parse(body, nullptr, false);
  if (!j.is_object()) {
    return false;
  }
  auto e = j.find("error");
  if (e == j.end() || !e->is_object()) {
    return false;
  }
  if (format == api_format::anthropic) {
    auto t = j.find("type");
    return t != j.end() && *t == "error";
  }
  return true;
}

std::string_view error_type_for_status(unsigned status, api_format format) noexcept {
  bool anthropic = format == api_format::anthropic;
  switch (status) {
  case 400:
  case 422:
    return "invalid_request_error";
  case 401:
    return "authentication_error";
  case 403:
    return "permission_error";
  case 404:
    return anthropic ? "not_found_error" : "invalid_request_error";
  case 413:
    return anthropic ? "request_too_large" : "invalid_request_error";
  case 429:
    return "rate_limit_error";
  case 503:
  case 529:
    return anthropic ? "overloaded_error" : "server_error";
  case 504:
    return anthropic ? "timeout_error" : "server_error";
  default:
    break;
  }
  if (status >= 500) {
    return anthropic ? "api_error" : "server_error";
  }
  return "invalid_request_error";
}

std::string error_message_of(std::string_view body) {
  auto j = json::parse(body, nullptr, false);
  if (!j.is_object()) {
    return {};
  }
  if (auto e = j.find("error"); e != j.end()) {
    if (e->is_string()) {
      return e->get<std::string>();
    }
    if (e->is_object()) {
      if (auto m = e->find("message"); m != e->end() && m->is_string()) {
        return m->get<std::string>();
      }
    }
  }
  for (auto key : {"message", "detail"}) {
    if (auto m = j.find(key); m != j.end() && m->is_string()) {
      return m->get<std::string>();
    }
  }
  return {};
}

std::string client_error_body(unsigned status, std::string_view body, bool truncated,
                              api_format format, std::size_t excerpt_limit) {
  if (!truncated && is_error_body(body, format)) {
    return std::string(body);
  }
  auto text = truncated ? std::string{} : error_message_of(body);
  if (text.empty()) {
    text.assign(body);
  }
  bool cut = truncated || text.size() > excerpt_limit;
  auto message = "the worker answered " + std::to_string(status);
  if (!text.empty()) {
    message += ": ";
    message += utf8_prefix(text, excerpt_limit);
  }
  if (cut) {
    message += " [truncated]";
  }
  auto type = error_type_for_status(status, format);
  json out;
  if (format == api_format::anthropic) {
    out = {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
  } else {
    out = {
        {"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace troupe::protocol
