#include "actors/request/relay_sink.hpp"

#include "actors/errors.hpp"
#include "actors/request/retry_policy.hpp"
#include "protocol/upstream_error.hpp"
#include "transport/header_fields.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>
#include <optional>

namespace troupe::actors {

namespace http = transport::http;

namespace {

/// Field names compare case-insensitively, in ASCII (no locale).
using boost::beast::iequals;

// Never relayed: hop-by-hop (RFC 9110 7.6.1), framing (the gateway frames its own answer),
// and the request id (the gateway sets its own). Beast knows each name but the last, so a
// field is checked by its enum (an integer compare), not by its text.
constexpr std::array dropped_fields{http::field::connection,
                                    http::field::keep_alive,
                                    http::field::proxy_connection,
                                    http::field::transfer_encoding,
                                    http::field::te,
                                    http::field::trailer,
                                    http::field::upgrade,
                                    http::field::proxy_authenticate,
                                    http::field::proxy_authorization,
                                    http::field::content_length,
                                    http::field::date};
constexpr std::string_view dropped_unknown = "x-request-id";

/// True when the Connection header's comma-separated options name `name` (those headers are
/// hop-by-hop too).
bool named_by_connection(std::string_view connection, std::string_view name) {
  while (!connection.empty()) {
    auto comma = connection.find(',');
    auto token = connection.substr(0, comma);
    connection =
        comma == std::string_view::npos ? std::string_view{} : connection.substr(comma + 1);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) {
      token.remove_prefix(1);
    }
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) {
      token.remove_suffix(1);
    }
    if (iequals(token, name)) {
      return true;
    }
  }
  return false;
}

/// The worker's fields the relay reads, found in one pass (`head[...]` is a case-insensitive
/// tree search per name, ~600 instructions each).
constexpr std::array read_fields{http::field::connection, http::field::content_type,
                                 http::field::content_length};

/// True for a worker's field `f` the client may see, `connection` being the value of the
/// worker's first Connection field.
template <class Field> bool relayed(const Field& f, std::string_view connection) {
  auto known = f.name();
  if (known == http::field::unknown ? iequals(f.name_string(), dropped_unknown)
                                    : std::find(dropped_fields.begin(), dropped_fields.end(),
                                                known) != dropped_fields.end()) {
    return false;
  }
  return connection.empty() || !named_by_connection(connection, f.name_string());
}

/// `relayable_headers` with the value of `head`'s first Connection field already found.
transport::header_list relayable_headers(const transport::response_head& head,
                                         std::string_view connection) {
  transport::header_list out;
  for (auto& f : head) {
    if (auto name = f.name_string(); relayed(f, connection)) {
      out.emplace_back(std::string(name), std::string(f.value()));
    }
  }
  return out;
}

/// The relayable fields of `head` written once, for the client's response as it is; `own`,
/// when given, names a field the gateway sets itself (the worker's is left out).
transport::serialized_head relayed_head(const transport::response_head& head,
                                        std::string_view connection, std::string_view own = {}) {
  transport::serialized_head out{head.result_int(), {}};
  out.fields.reserve(256);
  for (auto& f : head) {
    if (auto name = f.name_string();
        relayed(f, connection) && (own.empty() || !iequals(name, own))) {
      transport::append_field(out.fields, name, f.value());
    }
  }
  return out;
}

} // namespace

transport::header_list relayable_headers(const transport::response_head& head) {
  std::array<std::optional<std::string_view>, 1> connection;
  transport::first_fields(head, std::array{http::field::connection}, connection);
  return relayable_headers(head, connection[0].value_or(std::string_view{}));
}

relay_sink::relay_sink(std::shared_ptr<transport::reply_channel> reply,
                       std::shared_ptr<const std::string> request_id, protocol::api_format format,
                       std::size_t body_limit, std::size_t error_body_limit,
                       response_observer observer)
    : reply_(std::move(reply)),
      request_id_(request_id ? std::move(request_id) : std::make_shared<const std::string>()),
      format_(format), body_limit_(body_limit), error_body_limit_(error_body_limit),
      observer_(std::move(observer)) {}

void relay_sink::on_source(std::weak_ptr<transport::flow_source> source) {
  source_ = std::move(source);
}

bool relay_sink::on_head(const transport::response_head& head) {
  status_ = head.result_int();
  std::array<std::optional<std::string_view>, read_fields.size()> read;
  transport::first_fields(head, read_fields, read);
  const auto [connection, type, length] = read; // read_fields' order
  const auto content_type = type.value_or(std::string_view{});
  const auto content_length = length.value_or(std::string_view{});
  const auto connection_value = connection.value_or(std::string_view{});
  // A kept error is read like any error body, even one that says it is a stream.
  held_ = hold_ && retryable_status(status_);
  if (!held_ && protocol::is_event_stream(content_type)) {
    streaming_ = true;
    // A stream is never cached: the gateway's Cache-Control replaces the worker's.
    auto relayed = relayed_head(head, connection_value, "cache-control");
    transport::append_field(relayed.fields, "x-request-id", *request_id_);
    relayed.fields.append("cache-control: no-cache\r\n");
    // A stream is relayed as it is read: a client that falls behind pauses the reading. A
    // body relayed whole is bounded by its size limit instead.
    reply_->set_flow_source(std::move(source_));
    reply_->begin_stream_serialized(std::move(relayed));
    services::request_tracker::update(track_, services::request_phase::streaming);
    return true;
  }
  // An error body is read up to its own limit and then answered, cut: no Content-Length
  // makes it refused before it is read. Its head may be rewritten (`answer_error`), so it is
  // kept as a list; a success is relayed as it came, its head written once.
  error_ = status_ >= 400;
  if (error_) {
    headers_ = relayable_headers(head, connection_value);
    headers_.emplace_back("x-request-id", *request_id_);
  } else {
    head_ = relayed_head(head, connection_value);
    transport::append_field(head_.fields, "x-request-id", *request_id_);
  }
  auto limit = error_ ? error_body_limit_ : body_limit_;
  if (auto len = content_length; !len.empty()) {
    auto n = std::strtoull(std::string(len).c_str(), nullptr, 10);
    if (n > limit && !error_) {
      return false;
    }
    body_.reserve(std::min<std::size_t>(n, limit));
  }
  return true;
}

bool relay_sink::on_body(std::string_view piece) {
  if (streaming_) {
    // Forward every event completed by this piece, in one chunk.
    std::string out;
    framer_.feed(piece, [&](std::string_view ev) {
      out.append(ev);
      if (observer_) {
        observer_(ev);
      }
    });
    if (!out.empty()) {
      reply_->write_chunk(std::move(out));
    }
    return true;
  }
  if (error_) {
    if (body_.size() + piece.size() > error_body_limit_) {
      // Stop reading at the limit: the client gets what was read, as an excerpt.
      body_.append(piece.substr(0, error_body_limit_ - body_.size()));
      if (held_) {
        truncated_ = true; // answered, if ever, by `release_held`
      } else {
        answer_error(true);
      }
      return false;
    }
    body_.append(piece);
    return true;
  }
  if (body_.size() + piece.size() > body_limit_) {
    return false;
  }
  body_.append(piece);
  return true;
}

void relay_sink::answer_error(bool truncated) {
  ended_ = true;
  responded_ = true;
  auto body = protocol::client_error_body(status_, body_, truncated, format_);
  transport::response res{static_cast<http::status>(status_), 11};
  bool rewritten = truncated || body != body_;
  for (auto& [name, value] : headers_) {
    if (rewritten && (iequals(name, "content-type") || iequals(name, "content-encoding"))) {
      continue;
    }
    res.set(name, value);
  }
  if (rewritten) {
    res.set(http::field::content_type, "application/json");
  }
  res.body() = std::move(body);
  reply_->respond(std::move(res));
}

void relay_sink::on_complete() {
  ended_ = true;
  if (streaming_) {
    // A stream whose last event lacks its blank line still ends with that event.
    if (auto rest = framer_.pending(); !rest.empty()) {
      reply_->write_chunk(std::string(rest) + "\n\n");
    }
    reply_->end_stream();
    return;
  }
  if (held_) {
    return; // the owner decides: another worker, or `release_held`
  }
  if (error_) {
    return answer_error(false);
  }
  if (observer_ && status_ / 100 == 2) {
    observer_(body_);
  }
  responded_ = true;
  reply_->respond_serialized(std::move(head_), std::move(body_));
}

void relay_sink::release_held() {
  if (!held_ || responded_ || failed_) {
    return;
  }
  held_ = false;
  answer_error(truncated_);
}

void relay_sink::fail(const protocol::api_error& err) {
  if (ended_) {
    return;
  }
  ended_ = true;
  failed_ = true;
  if (streaming_) {
    reply_->write_chunk(protocol::render_error_event(err, format_));
    reply_->end_stream();
    return;
  }
  responded_ = true;
  reply_->respond(make_error_response(err, format_, *request_id_));
}

} // namespace troupe::actors
