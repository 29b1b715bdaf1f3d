#pragma once

#include "transport/http_types.hpp"
#include "transport/serialized_head.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <variant>

namespace troupe::transport {

/// One piece of a response as a reply channel hands it to its connection.
struct write_item {
  /// A complete response with a serialized head.
  struct serialized {
    serialized_head head;
    std::string body;
  };
  /// The head of a streamed response (its body follows as chunks).
  struct head {
    serialized_head head;
  };
  struct chunk {
    std::string data;
  };
  struct last_chunk {};
  std::variant<std::shared_ptr<response>, serialized, head, chunk, last_chunk> what;
};

/// Bytes ready for the socket: `prefix`, then `payload` (kept as given, not copied), then
/// `suffix`. The head of a response and the framing of a chunk are written by hand: the same
/// bytes as Beast's serializer at a fraction of its cost, and queued pieces go out in one write.
struct wire_item {
  std::string prefix;
  std::string payload;
  std::string_view suffix;
  bool ends_response = false;
};

/// Appends the status line and header fields of `head` (minus framing fields: the caller adds
/// its own), without the blank line.
void serialize_head(std::string& out, const http::response_header<>& head);

/// Frames the responses of one connection, one at a time: heads get our framing fields, chunks
/// chunked encoding (HTTP/1.0 clients get the raw stream, delimited by closing the connection).
/// The answer to a HEAD request is its head alone (RFC 9110, 9.3.2): the framing fields a GET
/// would get (`Content-Length`, `Transfer-Encoding`), never the content a handler gives.
class response_framer {
public:
  /// A new response to a request of HTTP `version`; `keep_alive`: the connection may stay open;
  /// `head_request`: the request was a HEAD.
  void begin(unsigned version, bool keep_alive, bool head_request = false) noexcept {
    version_ = version;
    keep_alive_ = keep_alive;
    head_request_ = head_request;
    chunked_ = false;
  }

  /// False once the connection must close after the current response.
  bool keep_alive() const noexcept { return keep_alive_; }

  /// `item` as bytes for the socket.
  wire_item frame(write_item item);

private:
  /// The Connection field a response needs beyond HTTP's default, with its leading CRLF.
  std::string_view connection_field() const noexcept;

  unsigned version_ = 11;     ///< HTTP version of the current request.
  bool keep_alive_ = true;    ///< The connection stays open after the current response.
  bool chunked_ = false;      ///< The current stream uses chunked encoding.
  bool head_request_ = false; ///< The current request is a HEAD: no content goes out.
};

} // namespace troupe::transport
