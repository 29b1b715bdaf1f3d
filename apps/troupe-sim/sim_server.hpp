#pragma once

// The simulator serves HTTP with the gateway's own server (transport/http_server.hpp); these
// names keep the simulator's code speaking of what it is: a worker's server and its replies.

#include "transport/http_server.hpp"
#include "transport/reply_channel.hpp"

namespace troupe::sim {

namespace net = transport::net;

/// The way back to the client of one request (`abort()` drops the connection mid-response for
/// the failure injection).
using sim_reply = transport::reply_channel;

/// Called for each request, on the io_context's thread.
using sim_handler = transport::request_handler;

/// An HTTP/1.1 keep-alive server (one per listening port of the simulator).
using sim_server = transport::http_server;

} // namespace troupe::sim
