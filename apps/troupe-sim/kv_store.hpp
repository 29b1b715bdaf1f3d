#pragma once

#include "transport/http_types.hpp"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace troupe::sim {

namespace net = transport::net;

/// Counters of the KV blocks a vLLM prefill worker pinned for its decode peers.
struct kv_store_counters {
  std::uint64_t pins = 0;           ///< Prefills that pinned blocks.
  std::uint64_t sent_blocks = 0;    ///< Blocks read by a decode worker (then freed).
  std::uint64_t expired_blocks = 0; ///< Blocks freed unread after `kv_hold_timeout_ms`.
  std::uint64_t refused_reads = 0;  ///< Reads refused (unknown blocks, wrong engine or prompt).
};

/// How a read ended.
struct kv_read_result {
  unsigned status = 200;  ///< 200, or 404 (not pinned), 409 (another engine), 422 (another prompt).
  std::size_t blocks = 0; ///< Blocks read.
  std::string detail;     ///< Why not, for the decode's error message.
};

/// The KV blocks a vLLM prefill worker holds for decode workers, as its KV connector does: the
/// full blocks of a finished prefill's prompt stay pinned until a decode worker reads them (then
/// they are freed) or until the hold timeout passes (vLLM's `VLLM_NIXL_ABORT_REQUEST_TIMEOUT`,
/// 480 s). Every block is named by an id (NIXL: the decode asks for the ids the prefill returned)
/// and, for Mooncake, the whole pin by the transfer id the gateway minted. Each block remembers
/// its prompt's chained block key, so a decode worker asking with another prompt is refused: a
/// wrong relay fails visibly. One timer serves every expiry. Runs on one io_context thread.
class kv_store {
public:
  /// A store on `ioc` for the engine `engine_id`.
  kv_store(net::io_context& ioc, std::string engine_id);
  ~kv_store();

  kv_store(const kv_store&) = delete;
  kv_store& operator=(const kv_store&) = delete;

  /// Pins blocks with `keys` (one per full block of the prompt) for `hold`; their ids. With a
  /// `transfer_id` they can also be read by it. No keys: nothing pinned (vLLM frees at once).
  std::vector<std::uint64_t> pin(const std::vector<std::uint64_t>& keys,
                                 std::optional<std::string> transfer_id,
                                 std::chrono::milliseconds hold);

  /// Reads and frees the blocks `ids` of engine `engine_id`, checking their keys against `keys`
  /// (the reader's prompt: key i for block i).
  kv_read_result read(const std::string& engine_id, const std::vector<std::uint64_t>& ids,
                      const std::vector<std::uint64_t>& keys);

  /// Reads and frees the blocks pinned under `transfer_id`; `keys` must be exactly theirs.
  kv_read_result read_transfer(const std::string& engine_id, const std::string& transfer_id,
                               const std::vector<std::uint64_t>& keys);

  /// The engine id.
  const std::string& engine_id() const noexcept { return engine_id_; }

  /// Blocks pinned now.
  std::size_t pinned_blocks() const noexcept { return blocks_.size(); }

  /// Counters since start.
  const kv_store_counters& counters() const noexcept { return counters_; }

private:
  struct block {
    std::uint64_t key = 0; ///< Chained key of its prompt up to this block.
    std::uint64_t pin = 0; ///< The pin holding it.
  };
  struct pin_entry {
    std::vector<std::uint64_t> ids;
    std::optional<std::string> transfer_id;
    std::chrono::steady_clock::time_point expires;
  };

  void release(std::uint64_t block_id);
  void forget_pin(std::uint64_t pin);
  void arm();
  void expire();

  std::string engine_id_;
  net::steady_timer timer_;
  std::uint64_t next_block_ = 1;
  std::uint64_t next_pin_ = 1;
  std::unordered_map<std::uint64_t, block> blocks_;
  std::unordered_map<std::uint64_t, pin_entry> pins_;
  std::unordered_map<std::string, std::uint64_t> transfers_;
  std::multimap<std::chrono::steady_clock::time_point, std::uint64_t> expiries_;
  kv_store_counters counters_;
};

} // namespace troupe::sim
