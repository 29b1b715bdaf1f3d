// In sequence (vLLM's prefill/decode disaggregation, as smg's HTTP PD router since PR #2255 and
// vLLM's example proxy): the prefill leg goes first, made a one-token unstreamed request tagged
// with the prefill worker's KV connector params; its answer names the KV blocks it keeps
// (`kv_transfer_params`). Then the decode leg sends the client's own request with those params
// (NIXL, passthrough) or with params the gateway made (Mooncake, under a transfer id it minted),
// and its answer, streamed or not, is relayed to the client as a regular request's. A failed or
// slow prefill ends the pair before the decode leg starts; a decode failure is answered in the
// route's format. The legs are the pair's children (pd_path.cpp), so cancelling, deadlines and
// loads are those of any pair.

#include "actors/errors.hpp"
#include "actors/request/pd_path.hpp"
#include "actors/request/request_state.hpp"
#include "protocol/bootstrap.hpp"
#include "protocol/kv_transfer.hpp"
#include "protocol/worker_error.hpp"
#include "services/logs.hpp"

#include <spdlog/spdlog.h>

namespace troupe::actors {

namespace {

using protocol::kv_connector;
using protocol::worker_type;

class sequential_dispatch final : public pd_strategy {
public:
  std::optional<protocol::api_error> prepare(request_self self, pd_path& pair) override {
    auto op = self->state.op->op;
    if (!protocol::vllm_serves_in_sequence(op)) {
      return protocol::api_error{
          protocol::error_code::bad_request,
          "the prefill/decode pair is vLLM, which serves chat, completions, Messages and "
          "Responses in sequence, not " +
              std::string(self->state.op->name),
          {}};
    }
    // One consumer per KV handoff: a request that fans out gets no prefill leg (smg's rule).
    fanout_ = protocol::sampling_n(pair.body()) > 1;
    return std::nullopt;
  }

  void start(request_self self, pd_path& pair) override {
    auto& st = self->state;
    sink_.reset();
    const auto& prefill = *pair.slot(worker_type::prefill).worker;
    connector_ = protocol::effective(connector_of(prefill));
    transfer_id_.clear();
    if (fanout_) {
      count_kv(st, "fanout");
      return start_decode(self, pair, std::nullopt);
    }
    if (connector_ == kv_connector::mooncake) {
      transfer_id_ = protocol::transfer_id(st.svc->rooms->next(), st.svc->rooms->next());
    }
    auto leg = pair.body();
    protocol::make_prefill_leg(leg, st.op->op, protocol::prefill_params(connector_, transfer_id_));
    st.svc->tracker->update(st.in->track, services::request_phase::prefilling);
    pair.start_leg(self, worker_type::prefill,
                   make_upstream_call(self, prefill, protocol::dump_body(leg)),
                   pair.prefill_sink());
  }

  void on_leg_ok(request_self self, pd_path& pair, worker_type role) override {
    if (role != worker_type::prefill) {
      return;
    }
    auto& st = self->state;
    const auto& prefill = *pair.slot(worker_type::prefill).worker;
    std::optional<nlohmann::ordered_json> params;
    if (connector_ == kv_connector::mooncake) {
      auto engine = kv_engine_id_of(prefill);
      if (!engine.empty()) {
        params = protocol::mooncake_decode_params(
            transfer_id_, engine, prefill.url.host,
            prefill.spec.bootstrap_port.value_or(protocol::default_bootstrap_port));
        count_kv(st, "minted");
      } else {
        logs::request(st.in->request_id)
            .warn("Mooncake prefill {} has no kv_engine_id (register it, or let the worker "
                  "report it): the decode computes the prompt",
                  prefill.id);
        count_kv(st, "missing");
      }
    } else if ((params = protocol::harvest_params(pair.prefill_sink()->body()))) {
      count_kv(st, "relayed");
    } else {
      if (connector_ == kv_connector::nixl) {
        logs::request(st.in->request_id)
            .warn("prefill {} returned no kv_transfer_params: the decode computes the prompt",
                  prefill.id);
      }
      count_kv(st, "missing");
    }
    start_decode(self, pair, std::move(params));
  }

  std::optional<protocol::api_error> kept_answer(worker_type role) override {
    // A decode error answer was relayed by the sink, in the route's format: it is the answer.
    if (role == worker_type::decode && sink_ && sink_->answered() && sink_->status() >= 400) {
      return protocol::worker_error(sink_->status(), {}, "the decode worker");
    }
    return std::nullopt;
  }

  std::optional<protocol::api_error> late_failure() override { return std::nullopt; }

  bool touched_client() const override { return sink_ && sink_->started(); }

  std::optional<unsigned> fail(request_self, const protocol::api_error& err,
                               bool worker_answer) override {
    if (!sink_) {
      return std::nullopt; // the decode leg never ran: the request actor answers
    }
    if (worker_answer) {
      return sink_->status();
    }
    sink_->fail(err);
    return protocol::http_status(err.code);
  }

  services::request_phase waiting_phase() const override {
    return services::request_phase::decoding;
  }

  std::string_view runtime() const noexcept override { return "vllm"; }

private:
  void start_decode(request_self self, pd_path& pair,
                    std::optional<nlohmann::ordered_json> params) {
    auto& st = self->state;
    const auto& decode = *pair.slot(worker_type::decode).worker;
    std::string body;
    if (params) {
      auto with = pair.body();
      with["kv_transfer_params"] = std::move(*params);
      body = protocol::dump_body(with);
    } else {
      body = protocol::dump_body(pair.body());
    }
    if (logs::request().should_log(spdlog::level::debug)) {
      logs::request(st.in->request_id)
          .debug("vLLM pair prefill={} decode={} connector={}{}",
                 pair.slot(worker_type::prefill).worker->id, decode.id,
                 protocol::to_string(connector_),
                 transfer_id_.empty() ? "" : " transfer " + transfer_id_);
    }
    // A Responses create is stored by the worker that wrote it: the decode worker.
    sink_ = make_relay_sink(self, st.in->reply, decode.id);
    st.svc->tracker->update(st.in->track, services::request_phase::decoding);
    pair.start_leg(self, worker_type::decode, make_upstream_call(self, decode, std::move(body)),
                   sink_);
  }

  void count_kv(request_state& st, std::string_view outcome) {
    if (auto& m = st.svc->metrics) {
      m->on_pd_kv_transfer(protocol::to_string(connector_), outcome);
    }
  }

  bool fanout_ = false;
  kv_connector connector_ = kv_connector::nixl;
  std::string transfer_id_;
  std::shared_ptr<relay_sink> sink_; ///< The decode answer's way to the client.
};

} // namespace

std::unique_ptr<pd_strategy> make_sequential_dispatch() {
  return std::make_unique<sequential_dispatch>();
}

} // namespace troupe::actors
