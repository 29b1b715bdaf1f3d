#include "transport/response_wire.hpp"

#include "transport/header_fields.hpp"

#include <cstdio>

namespace troupe::transport {

void serialize_head(std::string& out, const http::response_header<>& head) {
  append_status_line(out, head.result_int());
  for (auto& f : head) {
    auto name = f.name_string();
    if (f.name() == http::field::content_length || f.name() == http::field::connection ||
        f.name() == http::field::transfer_encoding) {
      continue;
    }
    out.append(name).append(": ");
    append_without_crlf(out, f.value());
    out.append("\r\n");
  }
}

namespace {

/// The status line and fields of `head`, written to `out` (the framing fields follow).
void start_head(std::string& out, const serialized_head& head) {
  out.reserve(head.fields.size() + 96);
  append_status_line(out, head.status);
  out.append(head.fields);
}

} // namespace

wire_item response_framer::frame(write_item item) {
  wire_item w;
  if (auto* full = std::get_if<std::shared_ptr<response>>(&item.what)) {
    auto& res = **full;
    // A handler may ask to close the connection (Connection: close); it cannot reopen it.
    keep_alive_ = keep_alive_ && res.keep_alive();
    w.prefix.reserve(256);
    serialize_head(w.prefix, res.base());
    w.prefix.append("Content-Length: ").append(std::to_string(res.body().size()));
    w.prefix.append(connection_field()).append("\r\n\r\n");
    if (!head_request_) {
      w.payload = std::move(res.body());
    }
  } else if (auto* s = std::get_if<write_item::serialized>(&item.what)) {
    start_head(w.prefix, s->head);
    w.prefix.append("Content-Length: ").append(std::to_string(s->body.size()));
    w.prefix.append(connection_field()).append("\r\n\r\n");
    if (!head_request_) {
      w.payload = std::move(s->body);
    }
  } else if (auto* h = std::get_if<write_item::head>(&item.what)) {
    if (version_ < 11) {
      keep_alive_ = false; // no chunked encoding in HTTP/1.0: the close ends the body
    }
    start_head(w.prefix, h->head);
    if (version_ >= 11) {
      w.prefix.append("Transfer-Encoding: chunked");
    } else {
      w.prefix.append("Connection: close");
    }
    w.prefix.append(version_ >= 11 ? connection_field() : "").append("\r\n\r\n");
    chunked_ = version_ >= 11;
  } else if (head_request_) {
    // A chunk or the end of a stream that answers a HEAD: the answer ended with its head.
  } else if (auto* c = std::get_if<write_item::chunk>(&item.what)) {
    if (chunked_) {
      char size[24];
      std::snprintf(size, sizeof(size), "%zx\r\n", c->data.size());
      w.prefix = size;
      w.suffix = "\r\n";
    }
    w.payload = std::move(c->data);
  } else if (chunked_) {
    w.suffix = "0\r\n\r\n";
  }
  return w;
}

std::string_view response_framer::connection_field() const noexcept {
  if (!keep_alive_) {
    return "\r\nConnection: close";
  }
  return version_ < 11 ? "\r\nConnection: keep-alive" : "";
}

} // namespace troupe::transport
