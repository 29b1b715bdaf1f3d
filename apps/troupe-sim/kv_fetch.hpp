#pragma once

#include "transport/http_types.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::transport {
class upstream_pool;
class upstream_exchange;
} // namespace troupe::transport

namespace troupe::sim {

namespace net = transport::net;

/// Which blocks a vLLM decode worker reads from which prefill worker.
struct kv_source {
  std::string host;                       ///< The prefill's KV side channel.
  std::uint16_t port = 0;                 ///< Its port.
  std::string engine_id;                  ///< The prefill engine named by the params.
  std::vector<std::uint64_t> block_ids;   ///< NIXL: the blocks named.
  std::optional<std::string> transfer_id; ///< Mooncake: the transfer named instead.
  std::vector<std::uint64_t> block_keys;  ///< The reader's prompt, block by block.
};

/// How a read ended.
struct kv_fetch_result {
  bool ok = false;
  std::size_t blocks = 0; ///< Blocks read.
  std::string detail;     ///< Why not.
};

/// A read in progress.
class kv_fetch {
public:
  virtual ~kv_fetch() = default;
  /// Stops it; the callback will not be called.
  virtual void cancel() = 0;
};

/// The decode side of vLLM's KV handoff: one `POST /kv/read` to the prefill's side channel,
/// bounded by a deadline, over one keep-alive pool per prefill. Runs on one io_context thread.
class kv_fetch_client {
public:
  explicit kv_fetch_client(net::io_context& ioc);
  ~kv_fetch_client();

  kv_fetch_client(const kv_fetch_client&) = delete;
  kv_fetch_client& operator=(const kv_fetch_client&) = delete;

  /// Reads `source` within `timeout`, then calls `done` once. Keep the handle while waiting.
  std::shared_ptr<kv_fetch> fetch(const kv_source& source, std::chrono::milliseconds timeout,
                                  std::function<void(kv_fetch_result)> done);

private:
  class call;
  std::shared_ptr<transport::upstream_pool> pool_for(const std::string& host, std::uint16_t port);

  net::io_context& ioc_;
  std::map<std::string, std::shared_ptr<transport::upstream_pool>> pools_;
};

} // namespace troupe::sim
