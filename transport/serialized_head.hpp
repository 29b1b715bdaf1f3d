#pragma once

// A response head written once as the bytes it has on the wire: its status and its header
// fields as `Name: value\r\n` lines. The relay of a worker's answer writes the fields it keeps
// straight into these bytes, and the connection adds its status line and framing fields: no
// header list, no Beast field tree, no serializer walk per response.

#include "transport/http_types.hpp"

#include <string>
#include <string_view>

namespace troupe::transport {

/// A response head without its status line and framing fields (Content-Length,
/// Transfer-Encoding, Connection: the connection writes its own).
struct serialized_head {
  unsigned status = 200;
  std::string fields; ///< `Name: value\r\n` per field, in order (CR and LF never inside).
};

/// True for the fields a connection writes itself and never takes from a head.
bool is_framing_field(std::string_view name) noexcept;

/// Appends the field `name: value` to `fields` (CR and LF dropped from both: no field can be
/// injected).
void append_field(std::string& fields, std::string_view name, std::string_view value);

/// `headers` as a serialized head of `status`, framing fields left out.
serialized_head serialize_fields(unsigned status, const header_list& headers);

/// `HTTP/1.1 <status> <reason>\r\n`, appended to `out` (the reason Beast gives the status).
void append_status_line(std::string& out, unsigned status);

/// The fields of `head` as a header list, in order.
header_list to_header_list(std::string_view fields);

/// `head` and `body` as a complete response (for reply channels that inspect what they send).
response to_response(const serialized_head& head, std::string body);

} // namespace troupe::transport
