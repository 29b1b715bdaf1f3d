#include "transport/header_block.hpp"

#include "transport/header_fields.hpp"
#include "transport/serialized_head.hpp"

namespace troupe::transport {

using namespace std::string_view_literals; // no strlen per piece

header_block::header_block(
    std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  for (auto& [name, value] : fields) {
    add(name, value);
  }
}

bool header_block::refuse(std::string_view name) {
  // The lengths first, inline: most names differ there, without a call of `iequals`.
  auto is = [name](std::string_view lower) {
    return name.size() == lower.size() && beast::iequals(name, lower);
  };
  if (is("host"sv) || is("content-length"sv) || is("connection"sv) || is("transfer-encoding"sv)) {
    return true;
  }
  content_type_ = content_type_ || is("content-type"sv);
  return false;
}

void header_block::add(std::string_view name, std::string_view value) {
  add(name, {}, value);
}

void header_block::add(std::string_view name, std::string_view prefix, std::string_view value) {
  if (refuse(name)) {
    return;
  }
  append_without_crlf(lines_, name);
  lines_.append(": "sv);
  append_without_crlf(lines_, prefix);
  append_without_crlf(lines_, value);
  lines_.append("\r\n"sv);
}

header_list header_block::list() const {
  return to_header_list(lines_);
}

} // namespace troupe::transport
