// Prefill/decode dual dispatch: the request actor picks a pair (both policies asked at once),
// injects the bootstrap fields, spawns a prefill leg and a decode leg (child actors) that send
// the same body to their workers at the same time, and joins them. The decode leg's response
// goes to the client through a gate that opens when the prefill leg has succeeded; the prefill
// leg's response is collected (for its input logprobs). If either leg fails, the other is
// cancelled at once and the client gets one error, the decode leg's when it has one.

#include "actors/errors.hpp"
#include "actors/pd_leg.hpp"
#include "actors/request/pd_reply_gate.hpp"
#include "actors/request/request_hints.hpp"
#include "actors/request/request_state.hpp"
#include "protocol/bootstrap.hpp"
#include "protocol/logprobs.hpp"
#include "protocol/worker_error.hpp"
#include "services/response_affinity.hpp"
#include "transport/collect_sink.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace troupe::actors {

using protocol::worker_type;
using transport::exchange_result;
using transport::exchange_status;

/// One leg of the current attempt, as the request actor sees it.
struct pd_leg_slot {
  worker_entry_ptr worker;
  pd_leg_actor leg;
  bool running = false;
  bool cancel_sent = false;
  std::optional<exchange_result> result;
  std::optional<protocol::api_error> failure; ///< Its own failure, not a cancellation we asked.
  bool retryable = false;                     ///< The failure left the worker untouched.
};

/// The prefill/decode state of a request actor.
struct pd_join {
  nlohmann::ordered_json body; ///< The parsed request, re-injected on every attempt.
  bool has_body = false;
  std::optional<std::size_t> batch; ///< Sequences that each get a room, if a batch.
  bool logprobs = false;            ///< Merge the prefill's input logprobs into the response.
  prompt_ref prompt;                ///< For the policies: views into the raw body it keeps.

  // -- pair selection --
  unsigned pending = 0; ///< Policy answers still awaited.
  worker_entry_ptr prefill_pick;
  worker_entry_ptr decode_pick;
  std::optional<protocol::api_error> prefill_error;
  std::optional<protocol::api_error> decode_error;

  // -- the legs --
  pd_leg_slot prefill;
  pd_leg_slot decode;
  std::shared_ptr<transport::collect_sink> prefill_sink;
  std::shared_ptr<pd_reply_gate> gate;
  bool decode_error_held = false; ///< The decode failure is the worker's error response.

  pd_leg_slot& slot(worker_type role) { return role == worker_type::prefill ? prefill : decode; }
};

namespace {

const char* leg_name(worker_type role) {
  return role == worker_type::prefill ? "prefill" : "decode";
}

void select_pair(request_self self);

/// A gateway-side leg failure, its message naming the leg.
protocol::api_error leg_error(worker_type role, const protocol::api_error& err) {
  return {err.code, std::string(leg_name(role)) + " leg: " + err.message, err.param};
}

/// Ends the request with `err`: through the gate once the legs were sent, else directly.
void answer_error(request_self self, const protocol::api_error& err, bool held_decode_error) {
  auto& st = self->state;
  if (!st.pd->gate) {
    return fail_request(self, err);
  }
  st.status =
      st.pd->gate->fail(err, st.format, st.in->request_id, st.in->req.version(), held_decode_error);
  if (!held_decode_error) {
    st.error = err.code; // the gateway's own error (a relayed worker error is the worker's)
  }
  finish_request(self);
}

void conclude(request_self self) {
  auto& st = self->state;
  auto& pd = *st.pd;
  if (st.cancelled) {
    st.status = protocol::http_status(protocol::error_code::client_closed);
    return finish_request(self);
  }
  if (pd.gate->overflowed() && !pd.decode.failure) {
    pd.decode.failure = protocol::api_error{
        protocol::error_code::upstream_too_large,
        "decode leg: the worker streamed more than the gateway holds while waiting for the "
        "prefill leg",
        {}};
  }
  const auto& failure = pd.decode.failure ? pd.decode.failure : pd.prefill.failure;
  if (!failure) {
    st.status = pd.decode.result ? pd.decode.result->http_status : 200;
    st.ttft = pd.decode.result ? pd.decode.result->first_byte : std::chrono::microseconds{0};
    return finish_request(self);
  }
  auto err = *failure;
  bool held = pd.decode.failure && pd.decode_error_held;
  // Nothing reached the client and a worker was not reached: another pair may serve it.
  bool retry_ok = !pd.gate->touched_client() && !held &&
                  (pd.decode.failure ? pd.decode.retryable : pd.prefill.retryable) &&
                  st.tried.size() < st.svc->cfg.retry.max_retries &&
                  std::chrono::steady_clock::now() < st.deadline;
  if (retry_ok) {
    for (auto* s : {&pd.prefill, &pd.decode}) {
      if (s->failure && s->retryable) {
        st.tried.push_back(s->worker->id);
      }
    }
    st.last_failure = err;
    spdlog::info("[{}] retrying with another pair after: {}", st.in->request_id, err.message);
    return select_pair(self);
  }
  spdlog::warn("[{}] prefill/decode pair failed: {}", st.in->request_id, err.message);
  answer_error(self, err, held);
}

/// True when `r` failed before the worker saw the request.
bool untouched(const exchange_result& r) {
  return r.status == exchange_status::connect_failed ||
         (r.status == exchange_status::broken && !r.head_received);
}

/// Records how a leg ended and what it means for the pair.
void on_leg_end(request_self self, worker_type role, caf::expected<exchange_result> outcome) {
  auto& st = self->state;
  auto& pd = *st.pd;
  auto& s = pd.slot(role);
  auto& other = pd.slot(role == worker_type::prefill ? worker_type::decode : worker_type::prefill);
  if (!s.running) {
    return;
  }
  s.running = false;
  if (!outcome) {
    s.failure = leg_error(role, to_api_error(outcome.error()));
  } else {
    auto& r = *outcome;
    s.result = r;
    if (auto held = role == worker_type::decode ? pd.gate->error_response() : std::nullopt) {
      // The worker answered an error, in full, even if our cancel came after it: the relay
      // holds it, in the API's format, and it wins over the prefill's.
      s.failure = protocol::worker_error(held->first, held->second, "the decode worker");
      pd.decode_error_held = true;
    } else if (r.status == exchange_status::cancelled) {
      if (!s.cancel_sent && !st.cancelled) {
        s.failure = leg_error(role, exchange_error(r, st.svc->cfg.request_timeout));
      }
    } else if (r.status != exchange_status::ok) {
      s.failure = leg_error(role, exchange_error(r, st.svc->cfg.request_timeout));
      s.retryable = untouched(r);
    } else if (r.http_status / 100 != 2) {
      auto body = role == worker_type::prefill ? pd.prefill_sink->body() : std::string{};
      s.failure = protocol::worker_error(r.http_status, body,
                                         "the " + std::string(leg_name(role)) + " worker");
    } else if (role == worker_type::prefill &&
               protocol::is_event_stream(pd.prefill_sink->content_type())) {
      // A streamed prefill reports a failure after its 200 head as an error event.
      s.failure = protocol::stream_error(pd.prefill_sink->body(), "the prefill worker");
    }
  }
  if (s.failure) {
    spdlog::debug("[{}] {} leg on {} failed: {}", st.in->request_id, leg_name(role), s.worker->id,
                  s.failure->message);
    if (auto& m = st.svc->metrics) {
      m->on_pd_leg_failure(role);
    }
    if (other.running && !other.cancel_sent) {
      other.cancel_sent = true;
      self->send(other.leg, cancel_atom_v);
    }
  } else if (role == worker_type::prefill && !pd.decode.failure) {
    // The KV cache is handed over: the decode response may reach the client.
    protocol::input_logprobs lp;
    if (pd.logprobs) {
      lp = protocol::read_input_logprobs(
          pd.prefill_sink->body(), protocol::is_event_stream(pd.prefill_sink->content_type()));
    }
    pd.gate->open(std::move(lp));
  }
  if (other.running) {
    st.svc->tracker->update(st.in->request_id, services::request_phase::joining);
    return;
  }
  conclude(self);
}

void dispatch_pair(request_self self) {
  auto& st = self->state;
  auto& pd = *st.pd;
  auto prefill = std::move(pd.prefill_pick);
  auto decode = std::move(pd.decode_pick);
  std::string body;
  if (pd.has_body) {
    protocol::bootstrap_target target{prefill->url.host, prefill->spec.bootstrap_port};
    auto rooms = protocol::inject_bootstrap(pd.body, pd.batch, target, *st.svc->rooms);
    body = protocol::dump_body(pd.body);
    if (spdlog::should_log(spdlog::level::debug)) {
      spdlog::debug("[{}] pair prefill={} decode={} bootstrap {}:{} rooms {}", st.in->request_id,
                    prefill->id, decode->id, target.host,
                    target.port ? std::to_string(*target.port) : "null",
                    nlohmann::json(rooms).dump());
    }
  }
  auto limit = st.svc->cfg.max_response_size;
  pd.gate = std::make_shared<pd_reply_gate>(st.in->reply, limit);
  pd.prefill_sink = std::make_shared<transport::collect_sink>(limit);
  // A Responses create is stored by the worker that wrote it: the decode worker.
  response_observer observer;
  if (st.in->op == protocol::operation::responses_create) {
    observer = services::remember_response_id(st.svc->responses, decode->id);
  }
  auto decode_sink =
      std::make_shared<relay_sink>(pd.gate, st.in->request_id, st.format, limit,
                                   st.svc->cfg.max_error_response_size, std::move(observer));
  decode_sink->on_stream_start([tracker = st.svc->tracker, id = st.in->request_id] {
    tracker->update(id, services::request_phase::streaming);
  });
  pd.decode_error_held = false;
  if (!st.worker_ids.empty()) {
    st.worker_ids += ",";
  }
  st.worker_ids += prefill->id + "+" + decode->id;
  st.svc->tracker->update(st.in->request_id, services::request_phase::dispatched);
  st.svc->tracker->add_worker(st.in->request_id, prefill->id);
  st.svc->tracker->add_worker(st.in->request_id, decode->id);

  auto prefill_call = make_upstream_call(self, *prefill, body);
  auto decode_call = make_upstream_call(self, *decode, std::move(body));
  pd.prefill = pd_leg_slot{};
  pd.decode = pd_leg_slot{};
  pd.prefill.worker = prefill;
  pd.decode.worker = decode;
  pd.prefill.leg = spawn_pd_leg(self, {worker_type::prefill, prefill, std::move(prefill_call),
                                       pd.prefill_sink, st.in->request_id});
  pd.decode.leg = spawn_pd_leg(self, {worker_type::decode, decode, std::move(decode_call),
                                      std::move(decode_sink), st.in->request_id});
  for (auto role : {worker_type::prefill, worker_type::decode}) {
    auto& s = pd.slot(role);
    s.running = true;
    self->request(s.leg, caf::infinite, dispatch_atom_v)
        .then([self, role](exchange_result& r) { on_leg_end(self, role, std::move(r)); },
              [self, role](caf::error& e) { on_leg_end(self, role, std::move(e)); });
  }
}

void on_selected(request_self self) {
  auto& st = self->state;
  auto& pd = *st.pd;
  if (--pd.pending > 0) {
    return;
  }
  if (st.cancelled) {
    return finish_request(self);
  }
  if (pd.decode_error || pd.prefill_error) {
    // After a failed attempt, running out of pairs is that failure's fault.
    auto err = st.last_failure ? *st.last_failure
                               : (pd.decode_error ? *pd.decode_error : *pd.prefill_error);
    return answer_error(self, err, false);
  }
  dispatch_pair(self);
}

void select_pair(request_self self) {
  auto& st = self->state;
  auto& pd = *st.pd;
  st.svc->tracker->update(st.in->request_id, services::request_phase::selecting);
  pd.pending = 2;
  pd.prefill_error.reset();
  pd.decode_error.reset();
  selection sel;
  sel.model = st.facts.model.value_or("");
  sel.exclude = st.tried;
  sel.routing_key = routing_key(st.in->req);
  sel.prompt = pd.prompt;
  // Both policies are asked at once; the pair is dispatched when both answered.
  for (auto role : {worker_type::prefill, worker_type::decode}) {
    sel.role = role;
    auto& policy = role == worker_type::prefill ? st.svc->prefill_policy : st.svc->decode_policy;
    self->request(policy, caf::infinite, select_atom_v, sel)
        .then(
            [self, role](worker_entry_ptr& w) {
              auto& pd = *self->state.pd;
              (role == worker_type::prefill ? pd.prefill_pick : pd.decode_pick) = std::move(w);
              on_selected(self);
            },
            [self, role](caf::error& e) {
              auto& pd = *self->state.pd;
              (role == worker_type::prefill ? pd.prefill_error : pd.decode_error) = to_api_error(e);
              on_selected(self);
            });
  }
}

/// A leg stopped without answering (it cannot, short of a bug): counts as its failure.
void on_down(request_self self, caf::down_msg& msg) {
  auto& st = self->state;
  if (!st.pd) {
    return;
  }
  for (auto role : {worker_type::prefill, worker_type::decode}) {
    auto& s = st.pd->slot(role);
    if (s.running && s.leg && s.leg.address() == msg.source) {
      on_leg_end(self, role,
                 make_caf_error(protocol::error_code::internal_error,
                                "the leg stopped unexpectedly: " + caf::to_string(msg.reason)));
    }
  }
}

} // namespace

void start_pd(request_self self) {
  auto& st = self->state;
  if (auto& m = st.svc->metrics) {
    m->on_pd_request();
  }
  st.pd = std::make_shared<pd_join>();
  auto& pd = *st.pd;
  self->set_down_handler([self](caf::down_msg& msg) { on_down(self, msg); });
  pd.has_body = protocol::info(st.in->op).has_body;
  if (pd.has_body) {
    pd.body = nlohmann::ordered_json::parse(st.in->req.body(), nullptr, false);
    if (!pd.body.is_object()) {
      return fail_request(
          self, {protocol::error_code::bad_request, "the request body must be a JSON object", {}});
    }
    // The parsed body is what the legs get; the raw one stays (moved, not copied) only as the
    // prompt a policy of the pair matches.
    const auto& cfg = st.svc->cfg;
    auto half = [&cfg](const std::string& p) { return p.empty() ? cfg.policy : p; };
    if (matches_prompts(half(cfg.prefill_policy)) || matches_prompts(half(cfg.decode_policy))) {
      auto raw = std::make_shared<const std::string>(std::move(st.in->req.body()));
      pd.prompt = request_prompt(raw, *raw, st.in->op, st.facts);
    }
    std::string{}.swap(st.in->req.body());
    pd.batch = protocol::bootstrap_batch_size(st.in->op, pd.body);
    if (pd.batch && *pd.batch > protocol::max_bootstrap_batch) {
      return fail_request(self, {protocol::error_code::bad_request,
                                 "a prefill/decode request may carry at most " +
                                     std::to_string(protocol::max_bootstrap_batch) +
                                     " sequences, this one has " + std::to_string(*pd.batch),
                                 {}});
    }
    pd.logprobs = protocol::wants_input_logprobs(st.in->op, pd.body);
  }
  select_pair(self);
}

void cancel_pd(request_self self) {
  auto& st = self->state;
  auto& pd = *st.pd;
  bool waiting = false;
  for (auto* s : {&pd.prefill, &pd.decode}) {
    if (s->running) {
      waiting = true;
      if (!s->cancel_sent) {
        s->cancel_sent = true;
        self->send(s->leg, cancel_atom_v);
      }
    }
  }
  // With legs running, their ends finish the request; while selecting, the answers do.
  if (!waiting && pd.pending == 0) {
    finish_request(self);
  }
}

} // namespace troupe::actors
