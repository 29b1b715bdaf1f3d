#pragma once

// Internal to the request actor: the prefill/decode path (docs/pd.md). An attempt is a pair of
// workers, each picked by its own policy, and two legs (child actors, actors/pd_leg.hpp), one
// per worker. What every pair shares is written once in `pd_path`: the parsed body, the legs,
// how a leg's end is judged, the join, cancelling, and what a failed pair means for a retry.
// How the two legs run and reach the client is its `pd_strategy`: dual dispatch (both at
// once, bootstrap fields, pd_dual.cpp) for SGLang pairs, in sequence (prefill first, decode fed
// with the `kv_transfer_params` it returned, pd_sequential.cpp) for vLLM pairs: the selected
// prefill worker's runtime chooses, per attempt (as smg does).

#include "actors/pd_leg.hpp"
#include "actors/request/request_path.hpp"
#include "services/request_tracker.hpp"
#include "transport/collect_sink.hpp"

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

namespace troupe::actors {

class pd_path;

/// How the legs of a pair run and reach the client.
class pd_strategy {
public:
  virtual ~pd_strategy() = default;

  /// Reads what the legs need from the request's parsed `body` (what they are sent, edited
  /// per attempt). A client error refuses the request.
  virtual std::optional<protocol::api_error> prepare(request_self self, pd_path& pair) = 0;

  /// Starts the current attempt's legs (`pd_path::start_leg`).
  virtual void start(request_self self, pd_path& pair) = 0;

  /// Leg `role` ended well; the other may still run.
  virtual void on_leg_ok(request_self self, pd_path& pair, protocol::worker_type role) = 0;

  /// The worker's own error answer of leg `role`, when the strategy kept it from the client
  /// (the request actor answers it as the worker gave it): it wins over the other leg's.
  virtual std::optional<protocol::api_error> kept_answer(protocol::worker_type role) = 0;

  /// A failure of the pair seen only once both legs are over, if any.
  virtual std::optional<protocol::api_error> late_failure() = 0;

  /// True once anything of the attempt reached the client: no other pair may take over.
  virtual bool touched_client() const = 0;

  /// Ends the client's response (see `request_path::fail`); nothing before any attempt ran.
  virtual std::optional<unsigned> fail(request_self self, const protocol::api_error& err,
                                       bool worker_answer) = 0;

  /// The request's phase while one leg of the attempt still runs (after the other ended).
  virtual services::request_phase waiting_phase() const { return services::request_phase::joining; }

  /// The runtime label of its metrics (`sglang`, `vllm`).
  virtual std::string_view runtime() const noexcept = 0;
};

/// Dual dispatch (SGLang): both legs at once with the same bootstrap fields; the decode answer
/// waits behind a gate until the prefill leg succeeded, gets its input logprobs merged in when
/// asked, and a decode error answer is kept for the request actor.
std::unique_ptr<pd_strategy> make_dual_dispatch();

/// In sequence (vLLM): the prefill leg first, sent one unstreamed token and tagged with the
/// prefill worker's KV connector params; then the decode leg with the client's request and the
/// `kv_transfer_params` the prefill returned (NIXL, passthrough) or the gateway made (Mooncake);
/// its answer is relayed to the client as a regular request's.
std::unique_ptr<pd_strategy> make_sequential_dispatch();

/// One leg of the current attempt, as the request actor sees it.
struct pd_leg_slot {
  worker_entry_ptr worker;
  pd_leg_actor leg;
  bool running = false;
  bool cancel_sent = false;
  std::optional<transport::exchange_result> result;
  std::optional<protocol::api_error> failure; ///< Its own failure, not a cancellation we asked.
  bool retryable = false;                     ///< The failure left the worker untouched.
  bool worker_answer = false;                 ///< The failure is the worker's error answer, kept.
  std::chrono::steady_clock::time_point sent; ///< When the leg was sent.
};

class pd_path final : public request_path {
public:
  pd_path(const gateway_services& svc, std::unique_ptr<pd_strategy> dual,
          std::unique_ptr<pd_strategy> sequential);

  std::optional<protocol::api_error> prepare(request_self self) override;
  std::span<const pick_spec> picks() const override { return picks_; }
  protocol::worker_type stateful_role() const override { return protocol::worker_type::decode; }
  void start(request_self self, std::span<worker_entry_ptr> workers) override;
  bool cancel(request_self self) override;
  std::optional<unsigned> fail(request_self self, const protocol::api_error& err,
                               bool worker_answer) override;
  std::optional<unsigned> release_kept() override { return std::nullopt; }
  void drop_kept() override {}

  // -- for strategies --

  /// True when the request has a body (`body` holds it parsed).
  bool has_body() const noexcept { return has_body_; }

  /// The parsed request body.
  nlohmann::ordered_json& body() noexcept { return body_; }

  /// Leg `role` of the current attempt.
  pd_leg_slot& slot(protocol::worker_type role) {
    return role == protocol::worker_type::prefill ? prefill_ : decode_;
  }

  /// Where the prefill leg's response goes: collected whole, for its errors and logprobs.
  const std::shared_ptr<transport::collect_sink>& prefill_sink() const { return prefill_sink_; }

  /// Sends leg `role` of the current attempt: `call` to its worker, the response to `sink`.
  void start_leg(request_self self, protocol::worker_type role, transport::upstream_call call,
                 std::shared_ptr<transport::response_sink> sink);

private:
  void on_leg_end(request_self self, protocol::worker_type role,
                  caf::expected<transport::exchange_result> outcome);
  void on_down(request_self self, const caf::down_msg& msg);
  void conclude(request_self self);

  /// Decode first: when both policies fail, the client is told the decode policy's error.
  std::array<pick_spec, 2> picks_;
  /// Dual dispatch and in sequence, each prepared on its first attempt; `strategy_` is the
  /// current attempt's.
  struct strategy_slot {
    std::unique_ptr<pd_strategy> impl;
    bool prepared = false;
    std::optional<protocol::api_error> refusal{}; ///< What its `prepare` refused, if it did.
  };
  std::array<strategy_slot, 2> strategies_;
  pd_strategy* strategy_ = nullptr;
  nlohmann::ordered_json body_;
  bool has_body_ = false;
  pd_leg_slot prefill_;
  pd_leg_slot decode_;
  std::shared_ptr<transport::collect_sink> prefill_sink_;
};

} // namespace troupe::actors
