#pragma once

#include "apps/troupe-sim/api_family.hpp"
#include "apps/troupe-sim/gen_request.hpp"
#include "apps/troupe-sim/sim_server.hpp"
#include "apps/troupe-sim/sim_stats.hpp"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace troupe::sim {

struct sim_context;
class rendezvous;
class kv_fetch;

/// One generative request being served, whatever its API: prefix-cache admission, the PD
/// rendezvous of a decode worker (SGLang) or its KV fetch (vLLM), the time to first token, then one
/// token per step for every sequence, rendered by the request's API family. Streamed events
/// produced at the same instant go out in one chunk. With an instant latency model a non-streamed
/// request is answered before `start` returns, without timers.
class generation : public std::enable_shared_from_this<generation> {
public:
  /// Serves `req` (parsed by `family`) to `reply` (null: nobody waits, as for a background
  /// response), holding `token` until it ends.
  static std::shared_ptr<generation> start(std::shared_ptr<sim_context> ctx, api_family& family,
                                           gen_request req, std::shared_ptr<sim_reply> reply,
                                           inflight token);

  /// Stops early: the sequences end as they are and the state is marked cancelled.
  void cancel();

  /// The request and its progress.
  const gen_state& state() const noexcept { return st_; }

  /// True once the request ended (complete, failed, cancelled or abandoned).
  bool ended() const noexcept { return ended_; }

  /// Use `start`; public for `std::make_shared`.
  generation(std::shared_ptr<sim_context> ctx, api_family& family, gen_request req,
             std::shared_ptr<sim_reply> reply, inflight token);
  ~generation();

private:
  class stream_sink;

  void run();
  void respond_or_stream();
  void start_kv_fetch();
  void pin_kv_blocks();
  bool receives_kv() const noexcept;
  void plan_sequences();
  void admit_prompts();
  void start_rendezvous();
  void after_rendezvous();
  void prefill_done();
  bool step();
  void run_steps();
  void wait_then(std::chrono::microseconds delay, void (generation::*next)());
  void complete();
  void fail(const protocol::api_error& err);
  void abandon();
  void end();
  void write_piece(sequence& s);
  template <class F> void guarded(F&& f) noexcept;

  std::shared_ptr<sim_context> ctx_; ///< Shared: a generation may outlive the simulator at exit.
  api_family& family_;
  gen_state st_;
  std::shared_ptr<sim_reply> reply_;
  inflight token_;
  std::unique_ptr<stream_sink> sink_;
  net::steady_timer timer_;
  std::shared_ptr<rendezvous> rendezvous_;
  std::shared_ptr<kv_fetch> kv_fetch_;
  std::vector<std::size_t> tool_cuts_; ///< Token boundaries in the tool call's arguments.
  std::size_t tokens_held_ = 0;        ///< Counted in `sim_stats::active_tokens` until the end.
  bool prefill_done_ = false;
  bool ended_ = false;
};

} // namespace troupe::sim
