#include "protocol/upstream_error.hpp"

#include <array>
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

const worker_status_info& worker_status(unsigned status) noexcept {
  using e = error_code;
  // Other client errors of a worker (401, 403, ...) are the gateway's configuration, not the
  // client's request: when the gateway answers for the worker, a bad gateway like any server
  // error. Relayed, they keep their status and get its type.
  static constexpr std::array<worker_status_info, 10> known{{
      {400, e::bad_request, "invalid_request_error", "invalid_request_error"},
      {401, e::bad_gateway, "authentication_error", "authentication_error"},
      {403, e::bad_gateway, "permission_error", "permission_error"},
      {404, e::not_found, "invalid_request_error", "not_found_error"},
      {413, e::payload_too_large, "invalid_request_error", "request_too_large"},
      {422, e::bad_request, "invalid_request_error", "invalid_request_error"},
      {429, e::too_many_requests, "rate_limit_error", "rate_limit_error"},
      {503, e::no_worker_available, "server_error", "overloaded_error"},
      {504, e::gateway_timeout, "server_error", "timeout_error"},
      {529, e::bad_gateway, "server_error", "overloaded_error"},
  }};
  static constexpr worker_status_info other_client{0, e::bad_gateway, "invalid_request_error",
                                                   "invalid_request_error"};
  static constexpr worker_status_info other_server{0, e::bad_gateway, "server_error", "api_error"};
  for (auto& row : known) {
    if (row.status == status) {
      return row;
    }
  }
  return status >= 500 ? other_server : other_client;
}

std::string_view error_type_for_status(unsigned status, api_format format) noexcept {
  auto& row = worker_status(status);
  return format == api_format::anthropic ? row.anthropic_type : row.openai_type;
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
