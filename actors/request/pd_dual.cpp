// Dual dispatch (SGLang's prefill/decode disaggregation): the bootstrap fields are injected
// into the body, both legs send it to their workers at the same time, and the decode worker
// fetches the KV cache from the prefill worker's bootstrap server. The decode leg's response
// goes to the client through a gate that opens when the prefill leg has succeeded; the
// prefill leg's response is collected (for its input logprobs). If either leg fails, the other
// is cancelled at once and the client gets one error, the decode leg's when it has one.

#include "actors/request/pd_path.hpp"
#include "actors/request/pd_reply_gate.hpp"
#include "actors/request/request_state.hpp"
#include "protocol/bootstrap.hpp"
#include "protocol/logprobs.hpp"
#include "protocol/sse.hpp"
#include "protocol/worker_error.hpp"
#include "services/logs.hpp"

namespace troupe::actors {

namespace {

using protocol::worker_type;

class dual_dispatch final : public pd_strategy {
public:
  std::optional<protocol::api_error> prepare(request_self self, pd_path& pair) override {
    auto& st = self->state;
    batch_ = protocol::bootstrap_batch_size(st.in->op, pair.body());
    if (batch_ && *batch_ > protocol::max_bootstrap_batch) {
      return protocol::api_error{protocol::error_code::bad_request,
                                 "a prefill/decode request may carry at most " +
                                     std::to_string(protocol::max_bootstrap_batch) +
                                     " sequences, this one has " + std::to_string(*batch_),
                                 {}};
    }
    logprobs_ = protocol::wants_input_logprobs(st.in->op, pair.body());
    return std::nullopt;
  }

  void start(request_self self, pd_path& pair) override {
    auto& st = self->state;
    const auto& prefill = pair.slot(worker_type::prefill).worker;
    const auto& decode = pair.slot(worker_type::decode).worker;
    std::string body;
    if (pair.has_body()) {
      protocol::bootstrap_target target{prefill->url.host, prefill->spec.bootstrap_port};
      auto rooms = protocol::inject_bootstrap(pair.body(), batch_, target, *st.svc->rooms);
      body = protocol::dump_body(pair.body());
      if (logs::request().should_log(spdlog::level::debug)) {
        logs::request(st.in->request_id)
            .debug("pair prefill={} decode={} bootstrap {}:{} rooms {}", prefill->id, decode->id,
                   target.host, target.port ? std::to_string(*target.port) : "null",
                   nlohmann::json(rooms).dump());
      }
    }
    gate_ = std::make_shared<pd_reply_gate>(st.in->reply, st.svc->cfg.max_response_size);
    // A Responses create is stored by the worker that wrote it: the decode worker.
    auto decode_sink = make_relay_sink(self, gate_, decode->id);
    // Both legs send the same bytes: one body, shared.
    auto both = transport::call_body::shared(std::make_shared<const std::string>(std::move(body)));
    auto prefill_call = make_upstream_call(self, *prefill, both);
    auto decode_call = make_upstream_call(self, *decode, std::move(both));
    pair.start_leg(self, worker_type::prefill, std::move(prefill_call), pair.prefill_sink());
    pair.start_leg(self, worker_type::decode, std::move(decode_call), std::move(decode_sink));
  }

  void on_leg_ok(request_self, pd_path& pair, worker_type role) override {
    if (role != worker_type::prefill || pair.slot(worker_type::decode).failure) {
      return;
    }
    // The KV cache is handed over: the decode response may reach the client.
    protocol::input_logprobs lp;
    if (logprobs_) {
      const auto& sink = *pair.prefill_sink();
      lp = protocol::read_input_logprobs(sink.body(),
                                         protocol::is_event_stream(sink.content_type()));
    }
    gate_->open(std::move(lp));
  }

  std::optional<protocol::api_error> kept_answer(worker_type role) override {
    if (role != worker_type::decode) {
      return std::nullopt;
    }
    // A decode error answer is held by the gate, in the API's format.
    if (auto held = gate_->error_response()) {
      return protocol::worker_error(held->first, held->second, "the decode worker");
    }
    return std::nullopt;
  }

  std::optional<protocol::api_error> late_failure() override {
    if (!gate_->overflowed()) {
      return std::nullopt;
    }
    return protocol::api_error{
        protocol::error_code::upstream_too_large,
        "decode leg: the worker streamed more than the gateway holds while waiting for the "
        "prefill leg",
        {}};
  }

  bool touched_client() const override { return gate_ && gate_->touched_client(); }

  std::string_view runtime() const noexcept override { return "sglang"; }

  std::optional<unsigned> fail(request_self self, const protocol::api_error& err,
                               bool worker_answer) override {
    if (!gate_) {
      return std::nullopt;
    }
    auto& st = self->state;
    return gate_->fail(err, st.op->format, st.in->request_id, st.in->req.version(), worker_answer);
  }

private:
  std::optional<std::size_t> batch_; ///< Sequences that each get a room, if a batch.
  bool logprobs_ = false;            ///< Merge the prefill's input logprobs into the answer.
  std::shared_ptr<pd_reply_gate> gate_;
};

} // namespace

std::unique_ptr<pd_strategy> make_dual_dispatch() {
  return std::make_unique<dual_dispatch>();
}

} // namespace troupe::actors
