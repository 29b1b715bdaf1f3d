#pragma once

#include "transport/request_fields.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <utility>
#include <vector>

namespace troupe::transport {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

/// An HTTP request as the gateway receives it: Beast's message, its fields kept flat.
using request = http::message<true, http::string_body, request_fields>;

/// A complete HTTP response.
using response = http::response<http::string_body>;

/// Header fields as name/value pairs, in order.
using header_list = std::vector<std::pair<std::string, std::string>>;

} // namespace troupe::transport
