#include "actors/request/pd_path.hpp"

#include "actors/errors.hpp"
#include "actors/request/request_hints.hpp"
#include "actors/request/request_state.hpp"
#include "protocol/sse.hpp"
#include "protocol/worker_error.hpp"
#include "services/logs.hpp"

namespace troupe::actors {

namespace {

using protocol::worker_type;
using transport::exchange_result;
using transport::exchange_status;

const char* leg_name(worker_type role) {
  return role == worker_type::prefill ? "prefill" : "decode";
}

/// A gateway-side leg failure, its message naming the leg.
protocol::api_error leg_error(worker_type role, const protocol::api_error& err) {
  return {err.code, std::string(leg_name(role)) + " leg: " + err.message, err.param};
}

worker_type other_role(worker_type role) {
  return role == worker_type::prefill ? worker_type::decode : worker_type::prefill;
}

/// The engine every prefill worker serving `model` runs, when they all run the same one.
std::optional<protocol::engine_runtime> prefill_runtime(const fleet_snapshot& fleet,
                                                        std::string_view model) {
  std::optional<protocol::engine_runtime> out;
  for (auto& w : fleet.workers) {
    if (w->spec.type != worker_type::prefill || !w->serves(model)) {
      continue;
    }
    auto r = runtime_of(*w);
    if (out && *out != r) {
      return std::nullopt;
    }
    out = r;
  }
  return out;
}

} // namespace

pd_path::pd_path(const gateway_services& svc, std::unique_ptr<pd_strategy> dual,
                 std::unique_ptr<pd_strategy> sequential)
    : picks_{{{worker_type::decode, svc.decode_policy, svc.decode_picker.get()},
              {worker_type::prefill, svc.prefill_policy, svc.prefill_picker.get()}}},
      strategies_{{{std::move(dual)}, {std::move(sequential)}}} {}

std::optional<protocol::api_error> pd_path::prepare(request_self self) {
  auto& st = self->state;
  if (auto& m = st.svc->metrics) {
    m->on_pd_request();
  }
  self->set_down_handler([this, self](caf::down_msg& msg) { on_down(self, msg); });
  has_body_ = st.op->has_body;
  if (!has_body_) {
    return std::nullopt;
  }
  body_ = nlohmann::ordered_json::parse(st.in->req.body(), nullptr, false);
  if (!body_.is_object()) {
    return protocol::api_error{
        protocol::error_code::bad_request, "the request body must be a JSON object", {}};
  }
  // The parsed body is what the legs get; the raw one stays (moved, not copied) only as the
  // prompt a policy of the pair matches.
  const auto& cfg = st.svc->cfg;
  auto half = [&cfg](const std::string& p) { return p.empty() ? cfg.policy : p; };
  if (matches_prompts(half(cfg.prefill_policy)) || matches_prompts(half(cfg.decode_policy))) {
    auto raw = std::make_shared<const std::string>(std::move(st.in->req.body()));
    st.prompt = request_prompt(raw, *raw, st.in->op, st.facts);
  }
  std::string{}.swap(st.in->req.body());
  // The strategy depends on the prefill worker a pair gets. When every prefill worker of the
  // model runs one engine, its strategy reads the body now, so a request it refuses is
  // refused before any policy is asked; else on the first pair of each kind (`start`).
  if (auto runtime = prefill_runtime(*st.svc->fleet->get(), st.facts.model.value_or(""))) {
    auto& chosen = strategies_[*runtime == protocol::engine_runtime::vllm ? 1 : 0];
    chosen.prepared = true;
    chosen.refusal = chosen.impl->prepare(self, *this);
    return chosen.refusal;
  }
  return std::nullopt;
}

void pd_path::start(request_self self, std::span<worker_entry_ptr> workers) {
  prefill_ = pd_leg_slot{};
  decode_ = pd_leg_slot{};
  decode_.worker = std::move(workers[0]);
  prefill_.worker = std::move(workers[1]);
  prefill_sink_ = std::make_shared<transport::collect_sink>(self->state.svc->cfg.max_response_size);
  // The prefill worker's engine decides how the pair hands the KV cache over. A request
  // without a body (`/health_generate`) moves no KV cache: both legs at once.
  bool sequential = has_body_ && runtime_of(*prefill_.worker) == protocol::engine_runtime::vllm;
  auto& chosen = strategies_[sequential ? 1 : 0];
  if (!chosen.prepared) {
    chosen.prepared = true;
    chosen.refusal = chosen.impl->prepare(self, *this);
  }
  strategy_ = chosen.impl.get();
  if (chosen.refusal) {
    attempt_end end;
    end.failure = chosen.refusal;
    return attempt_done(self, std::move(end));
  }
  strategy_->start(self, *this);
}

void pd_path::start_leg(request_self self, worker_type role, transport::upstream_call call,
                        std::shared_ptr<transport::response_sink> sink) {
  auto& s = slot(role);
  s.running = true;
  s.sent = std::chrono::steady_clock::now();
  s.leg = spawn_pd_leg(
      self, {role, s.worker, std::move(call), std::move(sink), self->state.in->request_id});
  self->request(s.leg, caf::infinite, dispatch_atom_v)
      .then([this, self, role](exchange_result& r) { on_leg_end(self, role, std::move(r)); },
            [this, self, role](caf::error& e) { on_leg_end(self, role, std::move(e)); });
}

void pd_path::on_leg_end(request_self self, worker_type role,
                         caf::expected<exchange_result> outcome) {
  auto& st = self->state;
  auto& s = slot(role);
  auto& other = slot(other_role(role));
  if (!s.running) {
    return;
  }
  s.running = false;
  bool stopped = false; // cancelled as we (or the client) asked: neither failed nor done
  if (!outcome) {
    s.failure = leg_error(role, to_api_error(outcome.error()));
  } else {
    auto& r = *outcome;
    s.result = r;
    if (auto kept = strategy_->kept_answer(role)) {
      // The worker answered an error, in full, even if our cancel came after it: kept, and
      // it wins over the other leg's failure.
      s.failure = std::move(kept);
      s.worker_answer = true;
    } else if (r.status == exchange_status::cancelled) {
      if (!s.cancel_sent && !st.cancelled) {
        s.failure = leg_error(role, exchange_error(r, st.svc->cfg.request_timeout));
      } else {
        stopped = true;
      }
    } else if (r.status != exchange_status::ok) {
      s.failure = leg_error(role, exchange_error(r, st.svc->cfg.request_timeout));
      s.retryable = untouched(r);
    } else if (r.http_status / 100 != 2) {
      auto body = role == worker_type::prefill ? prefill_sink_->body() : std::string{};
      s.failure = protocol::worker_error(r.http_status, body,
                                         "the " + std::string(leg_name(role)) + " worker");
    } else if (role == worker_type::prefill &&
               protocol::is_event_stream(prefill_sink_->content_type())) {
      // A streamed prefill reports a failure after its 200 head as an error event.
      s.failure = protocol::stream_error(prefill_sink_->body(), "the prefill worker");
    }
  }
  if (s.failure) {
    logs::request(st.in->request_id)
        .debug("{} leg on {} failed: {}", leg_name(role), s.worker->id, s.failure->message);
    if (auto& m = st.svc->metrics) {
      m->on_pd_leg_failure(role);
    }
    if (other.running && !other.cancel_sent) {
      other.cancel_sent = true;
      self->send(other.leg, cancel_atom_v);
    }
  } else if (!stopped) {
    if (auto& m = st.svc->metrics) {
      auto took = std::chrono::steady_clock::now() - s.sent;
      if (role == worker_type::prefill) {
        m->on_pd_phase(strategy_->runtime(), "prefill", took);
      } else {
        m->on_pd_phase(strategy_->runtime(), "decode", took);
        if (s.result && s.result->head_received) {
          m->on_pd_phase(strategy_->runtime(), "decode_first_byte", s.result->first_byte);
        }
      }
    }
    strategy_->on_leg_ok(self, *this, role);
  }
  if (prefill_.running || decode_.running) {
    st.svc->tracker->update(st.in->track, strategy_->waiting_phase());
    return;
  }
  conclude(self);
}

void pd_path::conclude(request_self self) {
  auto& st = self->state;
  attempt_end end;
  if (st.cancelled) {
    end.cancelled = true;
    return attempt_done(self, std::move(end));
  }
  if (auto late = strategy_->late_failure(); late && !decode_.failure) {
    decode_.failure = std::move(late);
  }
  auto& failed = decode_.failure ? decode_ : prefill_;
  if (!failed.failure) {
    end.status = decode_.result ? decode_.result->http_status : 200;
    end.ttft = decode_.result ? decode_.result->first_byte : std::chrono::microseconds{0};
    return attempt_done(self, std::move(end));
  }
  end.failure = failed.failure;
  end.worker_answer = decode_.failure && decode_.worker_answer;
  // Nothing reached the client and a worker was not reached: another pair may serve it.
  if (!strategy_->touched_client() && !end.worker_answer && failed.retryable) {
    end.retry = retry_kind::at_once;
    for (auto* s : {&prefill_, &decode_}) {
      if (s->failure && s->retryable) {
        end.failed_workers.push_back(s->worker->id);
      }
    }
  }
  attempt_done(self, std::move(end));
}

/// A leg stopped without answering (it cannot, short of a bug): counts as its failure.
void pd_path::on_down(request_self self, const caf::down_msg& msg) {
  for (auto role : {worker_type::prefill, worker_type::decode}) {
    auto& s = slot(role);
    if (s.running && s.leg && s.leg.address() == msg.source) {
      on_leg_end(self, role,
                 make_caf_error(protocol::error_code::internal_error,
                                "the leg stopped unexpectedly: " + caf::to_string(msg.reason)));
    }
  }
}

bool pd_path::cancel(request_self self) {
  bool running = false;
  for (auto* s : {&prefill_, &decode_}) {
    if (s->running) {
      running = true;
      if (!s->cancel_sent) {
        s->cancel_sent = true;
        self->send(s->leg, cancel_atom_v);
      }
    }
  }
  // With legs running, their ends finish the request.
  return running;
}

std::optional<unsigned> pd_path::fail(request_self self, const protocol::api_error& err,
                                      bool worker_answer) {
  return strategy_ ? strategy_->fail(self, err, worker_answer) : std::nullopt;
}

std::unique_ptr<request_path> make_pd_path(const gateway_services& svc) {
  return std::make_unique<pd_path>(svc, make_dual_dispatch(), make_sequential_dispatch());
}

} // namespace troupe::actors
