#include "actors/errors.hpp"

#include <caf/atom.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace troupe::actors {

namespace http = transport::http;

namespace {

constexpr auto category = caf::atom("troupe");

// CAF 0.17 treats code 0 as "no error": our codes travel shifted by one.
std::uint8_t to_code(protocol::error_code c) {
  return static_cast<std::uint8_t>(static_cast<int>(c) + 1);
}

protocol::error_code from_code(std::uint8_t c) {
  return static_cast<protocol::error_code>(c - 1);
}

} // namespace

caf::error to_caf_error(const protocol::api_error& err) {
  return caf::error{to_code(err.code), category, caf::make_message(err.message, err.param)};
}

caf::error make_caf_error(protocol::error_code code, std::string message) {
  return to_caf_error({code, std::move(message), {}});
}

protocol::api_error to_api_error(const caf::error& err) {
  if (err.category() == category) {
    protocol::api_error out;
    out.code = from_code(err.code());
    auto& ctx = err.context();
    if (ctx.match_elements<std::string, std::string>()) {
      out.message = ctx.get_as<std::string>(0);
      out.param = ctx.get_as<std::string>(1);
    }
    return out;
  }
  if (err.category() == caf::atom("system")) {
    auto code = static_cast<caf::sec>(err.code());
    if (code == caf::sec::request_receiver_down) {
      return {protocol::error_code::bad_gateway,
              "the worker was removed while serving the request",
              {}};
    }
  }
  return {protocol::error_code::internal_error, "internal error: " + caf::to_string(err), {}};
}

std::string render_caf_error(std::uint8_t code, caf::atom_value, const caf::message& context) {
  std::string out{protocol::to_string(from_code(code))};
  if (context.match_elements<std::string, std::string>()) {
    out += ": " + context.get_as<std::string>(0);
  }
  return out;
}

transport::response make_json_response(unsigned status, std::string body,
                                       const std::string& request_id) {
  transport::response res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  if (!request_id.empty()) {
    res.set("x-request-id", request_id);
  }
  res.body() = std::move(body);
  return res;
}

transport::response make_error_response(const protocol::api_error& err, protocol::api_format format,
                                        const std::string& request_id, unsigned version) {
  auto res = make_json_response(protocol::http_status(err.code),
                                protocol::render_error_body(err, format), request_id);
  res.version(version);
  if (err.code == protocol::error_code::out_of_resources) {
    // Descriptors free up as requests end: a second is a fair first guess, and the OpenAI and
    // Anthropic SDKs honour it when they retry.
    res.set(http::field::retry_after, "1");
  }
  return res;
}

} // namespace troupe::actors
