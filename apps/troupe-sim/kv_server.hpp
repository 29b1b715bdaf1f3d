#pragma once

#include "apps/troupe-sim/kv_store.hpp"
#include "transport/http_server.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace troupe::sim {

/// The KV side channel of a vLLM prefill worker (NIXL's side-channel port, Mooncake's bootstrap
/// address): decode workers read the blocks a prefill pinned, which frees them.
///
/// `POST /kv/read` `{"engine_id", "block_ids": [...], "block_keys": [...]}` (NIXL) or
/// `{"engine_id", "transfer_id", "block_keys": [...]}` (Mooncake) → 200 `{"blocks": n}`, or
/// 404 (not pinned), 409 (another engine), 422 (another prompt), 400 (a malformed read), each
/// with `{"error": "..."}`. `GET /health` → 200.
class kv_server {
public:
  /// A server on `host:port` reading from `store`.
  kv_server(net::io_context& ioc, std::string host, std::uint16_t port, kv_store& store);

  /// Binds and starts accepting; the bind error, if any.
  boost::system::error_code start();

  /// The bound port.
  std::uint16_t port() const noexcept { return server_.port(); }

  /// Stops accepting.
  void stop() { server_.stop(); }

private:
  void handle(transport::request&& req, std::shared_ptr<transport::reply_channel> reply);

  kv_store& store_;
  transport::http_server server_;
};

} // namespace troupe::sim
