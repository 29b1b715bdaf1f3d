#include "apps/troupe-bench/model_discovery.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

namespace troupe::bench {

namespace http = boost::beast::http;

std::optional<std::string> discover_model(const target& t, const std::string& api_key,
                                          std::string& why) {
  boost::asio::io_context ioc;
  boost::beast::tcp_stream stream{ioc};
  http::response<http::string_body> res;
  boost::system::error_code result;
  stream.expires_after(std::chrono::seconds(10));
  // Asynchronous operations on a private io_context, run here: the timeout covers them all.
  http::request<http::empty_body> req{http::verb::get, t.path_prefix + "/v1/models", 11};
  req.set(http::field::host, t.authority);
  req.set(http::field::user_agent, "troupe-bench");
  if (!api_key.empty()) {
    req.set(http::field::authorization, "Bearer " + api_key);
  }
  boost::beast::flat_buffer buffer;
  stream.async_connect(t.endpoints, [&](boost::system::error_code ec, const auto&) {
    if (ec) {
      result = ec;
      return;
    }
    http::async_write(stream, req, [&](boost::system::error_code ec, std::size_t) {
      if (ec) {
        result = ec;
        return;
      }
      http::async_read(stream, buffer, res,
                       [&](boost::system::error_code ec, std::size_t) { result = ec; });
    });
  });
  ioc.run();
  if (result) {
    why = "GET " + t.url + "/v1/models: " + result.message();
    return std::nullopt;
  }
  if (res.result_int() != 200) {
    why =
        "GET " + t.url + "/v1/models: HTTP " + std::to_string(res.result_int()) + " (give --model)";
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(res.body(), nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array()) {
    for (const auto& m : j["data"]) {
      if (m.is_object() && m.contains("id") && m["id"].is_string()) {
        return m["id"].get<std::string>();
      }
    }
  }
  why = "GET " + t.url + "/v1/models lists no model (give --model)";
  return std::nullopt;
}

} // namespace troupe::bench
