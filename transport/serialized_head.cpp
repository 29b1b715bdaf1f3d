#include "transport/serialized_head.hpp"

#include "transport/header_fields.hpp"

#include <array>
#include <charconv>

namespace troupe::transport {

bool is_framing_field(std::string_view name) noexcept {
  constexpr std::array<std::string_view, 3> framing{"content-length", "transfer-encoding",
                                                    "connection"};
  for (auto f : framing) {
    if (beast::iequals(name, f)) {
      return true;
    }
  }
  return false;
}

void append_field(std::string& fields, std::string_view name, std::string_view value) {
  append_without_crlf(fields, name);
  fields.append(": ");
  append_without_crlf(fields, value);
  fields.append("\r\n");
}

serialized_head serialize_fields(unsigned status, const header_list& headers) {
  serialized_head head{status, {}};
  std::size_t size = 0;
  for (auto& [name, value] : headers) {
    size += name.size() + value.size() + 4;
  }
  head.fields.reserve(size);
  for (auto& [name, value] : headers) {
    if (!is_framing_field(name)) {
      append_field(head.fields, name, value);
    }
  }
  return head;
}

void append_status_line(std::string& out, unsigned status) {
  char code[8];
  auto [end, ec] = std::to_chars(code, code + sizeof(code), status);
  out.append("HTTP/1.1 ").append(code, ec == std::errc{} ? end : code).push_back(' ');
  out.append(http::obsolete_reason(http::int_to_status(status))).append("\r\n");
}

header_list to_header_list(std::string_view fields) {
  header_list out;
  while (!fields.empty()) {
    auto eol = fields.find("\r\n");
    auto line = fields.substr(0, eol);
    fields = eol == std::string_view::npos ? std::string_view{} : fields.substr(eol + 2);
    auto colon = line.find(": ");
    if (colon == std::string_view::npos) {
      continue; // (never written by `append_field`)
    }
    out.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 2)));
  }
  return out;
}

response to_response(const serialized_head& head, std::string body) {
  response res;
  res.result(head.status);
  for (auto& [name, value] : to_header_list(head.fields)) {
    res.insert(name, value);
  }
  res.body() = std::move(body);
  return res;
}

} // namespace troupe::transport
