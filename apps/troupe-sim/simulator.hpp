#pragma once

#include "apps/troupe-sim/api_chat.hpp"
#include "apps/troupe-sim/api_completions.hpp"
#include "apps/troupe-sim/api_generate.hpp"
#include "apps/troupe-sim/api_messages.hpp"
#include "apps/troupe-sim/api_responses.hpp"
#include "apps/troupe-sim/bootstrap_server.hpp"
#include "apps/troupe-sim/exchange.hpp"
#include "apps/troupe-sim/info_api.hpp"
#include "apps/troupe-sim/kv_server.hpp"
#include "apps/troupe-sim/route_table.hpp"
#include "apps/troupe-sim/sim_context.hpp"
#include "apps/troupe-sim/sim_server.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <spdlog/logger.h>
#include <string>
#include <vector>

namespace troupe::sim {

/// A simulated inference worker: its main port's route table, failure injection, the handlers
/// of every endpoint, and (as a prefill worker) its bootstrap server. Single-threaded.
class simulator {
public:
  /// A worker configured by `cfg` on `ioc`.
  simulator(net::io_context& ioc, sim_config cfg, std::shared_ptr<spdlog::logger> log);
  ~simulator();

  simulator(const simulator&) = delete;
  simulator& operator=(const simulator&) = delete;

  /// Binds the main port, and the bootstrap port of a prefill worker; the first bind error.
  boost::system::error_code start();

  /// Stops accepting connections.
  void stop();

  /// The bound main port.
  std::uint16_t port() const noexcept { return server_.port(); }

  /// The bound bootstrap (SGLang) or KV side-channel (vLLM) port (0 unless the role is prefill).
  std::uint16_t bootstrap_port() const noexcept;

  /// Handles one request of the main port.
  void handle(transport::request&& req, transport::inbound_status status,
              std::shared_ptr<sim_reply> reply);

  /// The worker's state.
  sim_context& context() noexcept { return *ctx_; }

private:
  using handler = std::function<void(exchange&)>;

  std::vector<route<handler>> make_routes();

  // -- the data-plane pipeline --
  void inject_faults(exchange& x, const handler& next);
  std::optional<nlohmann::json> read_json(exchange& x);
  std::optional<gen_request> prepare(exchange& x, api_family& family, const nlohmann::json& body);
  bool check_bootstrap(exchange& x, const gen_request& req, const nlohmann::json& body);
  bool read_kv_params(exchange& x, gen_request& req, const nlohmann::json& body);
  void serve_generation(exchange& x, api_family& family);
  void respond_after(exchange& x, std::size_t prompt_tokens, std::string body);

  // -- endpoints with a pipeline of their own --
  void responses_create(exchange& x);
  void embeddings(exchange& x);
  void rerank(exchange& x);

  worker_facts facts() const noexcept;

  std::shared_ptr<sim_context> ctx_; ///< Shared with requests in flight (see `inflight`).
  generate_api generate_;
  chat_api chat_;
  completions_api completions_;
  messages_api messages_;
  responses_api responses_;
  route_table<handler> routes_;
  sim_server server_;
  std::unique_ptr<bootstrap_server> bootstrap_;
  std::unique_ptr<kv_server> kv_server_;
  std::int64_t started_at_;
  std::uint64_t seq_ = 0;
};

} // namespace troupe::sim
