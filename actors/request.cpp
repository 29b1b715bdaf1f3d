#include "actors/request.hpp"

#include "actors/errors.hpp"
#include "actors/request/request_hints.hpp"
#include "actors/request/request_state.hpp"
#include "actors/request/retry_policy.hpp"
#include "actors/request/upstream_headers.hpp"
#include "protocol/validation.hpp"

#include <random>
#include <spdlog/spdlog.h>

namespace troupe::actors {

namespace {

using transport::exchange_result;
using transport::exchange_status;

/// Why a finished request failed, as `troupe_router_request_errors_total{error_type}` and the
/// log line name it; empty when it did not.
std::string_view error_type(const request_state& st) {
  if (st.cancelled) {
    return protocol::to_string(protocol::error_code::client_closed);
  }
  if (st.error) {
    return protocol::to_string(*st.error);
  }
  // A worker's own server error, relayed as it answered it.
  return st.status >= 500 ? "upstream_status" : "";
}

/// The model label of a request's metrics: its model when the fleet serves it, `none` when it
/// names none, `unknown` otherwise (a client's made-up names never become series).
std::string_view model_label(const request_state& st) {
  if (!st.facts.model || st.facts.model->empty()) {
    return "none";
  }
  if (!st.worker_ids.empty() || st.svc->fleet->get()->service_of(*st.facts.model).known) {
    return *st.facts.model;
  }
  return "unknown";
}

/// The response-processing stage's hook for a dispatch to `worker`: a Responses create
/// remembers which worker stores the response it answers.
response_observer response_hook(request_self self, const worker_entry& worker) {
  auto& st = self->state;
  if (st.in->op != protocol::operation::responses_create) {
    return {};
  }
  return services::remember_response_id(st.svc->responses, worker.id);
}

/// True when a failure leaves the client untouched, so another worker may serve the request.
bool retryable(const exchange_result& r, const relay_sink& sink) {
  if (sink.started()) {
    return false;
  }
  return r.status == exchange_status::connect_failed ||
         (r.status == exchange_status::broken && !r.head_received);
}

/// A draw in [-1, 1] for the jitter of a backoff.
double jitter_draw() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>{-1.0, 1.0}(rng);
}

/// True when a retryable status may send the request to another worker: a request that makes
/// model work (a body), not one bound to the worker storing the Responses object it names.
bool status_retry_allowed(const request_state& st) {
  return protocol::info(st.in->op).has_body && !st.pinned;
}

/// The worker answered a retryable status, kept from the client: after a backoff another
/// worker gets the request; when the wait would outlast the deadline, the client gets the
/// answer as the worker gave it.
void retry_after_status(request_self self) {
  auto& st = self->state;
  auto delay = retry_backoff(st.svc->cfg.retry, st.backoffs, jitter_draw());
  if (std::chrono::steady_clock::now() + delay >= st.deadline) {
    st.sink->release_held();
    return finish_request(self);
  }
  spdlog::info("[{}] worker {} answered {}: retrying on another worker in {} ms", st.in->request_id,
               st.worker->id, st.sink->status(), delay.count());
  st.tried.push_back(st.worker->id);
  st.held = st.sink;
  st.last_failure.reset();
  ++st.backoffs;
  if (st.svc->metrics) {
    st.svc->metrics->on_retry(true);
  }
  if (delay.count() == 0) {
    return select_worker(self);
  }
  st.svc->tracker->update(st.in->request_id, services::request_phase::backing_off);
  self->delayed_send(self, delay, tick_atom_v);
}

void on_outcome(request_self self, exchange_result& r) {
  auto& st = self->state;
  st.order_id = 0;
  st.status = r.http_status;
  st.ttft = r.first_byte;
  if (st.cancelled || r.status == exchange_status::cancelled) {
    return finish_request(self);
  }
  if (st.sink->held()) {
    return retry_after_status(self);
  }
  // The sink may have answered already: a worker's error body cut at its size limit.
  if (r.status == exchange_status::ok || st.sink->answered()) {
    return finish_request(self);
  }
  auto err = exchange_error(r, st.svc->cfg.request_timeout);
  spdlog::warn("[{}] worker {} failed: {} {}", st.in->request_id, st.worker->id,
               to_string(r.status), r.detail);
  if (retryable(r, *st.sink) && st.tried.size() < st.svc->cfg.retry.max_retries &&
      std::chrono::steady_clock::now() < st.deadline) {
    st.tried.push_back(st.worker->id);
    st.last_failure = err;
    st.held.reset();
    if (st.svc->metrics) {
      st.svc->metrics->on_retry(false);
    }
    return select_worker(self);
  }
  st.sink->fail(err);
  st.status = protocol::http_status(err.code);
  st.error = err.code;
  finish_request(self);
}

void dispatch(request_self self, worker_entry_ptr worker) {
  auto& st = self->state;
  st.worker = std::move(worker);
  st.svc->tracker->update(st.in->request_id, services::request_phase::dispatched);
  note_worker(self, st.worker->id);
  // Keep the body for a retry only while another attempt is possible.
  bool may_retry = st.tried.size() < st.svc->cfg.retry.max_retries;
  auto body = may_retry ? st.in->req.body() : std::move(st.in->req.body());
  st.sink = std::make_shared<relay_sink>(
      st.in->reply, st.in->request_id, st.format, st.svc->cfg.max_response_size,
      st.svc->cfg.max_error_response_size, response_hook(self, *st.worker));
  st.sink->on_stream_start([tracker = st.svc->tracker, id = st.in->request_id] {
    tracker->update(id, services::request_phase::streaming);
  });
  if (may_retry && status_retry_allowed(st)) {
    st.sink->hold_retryable_errors();
  }
  dispatch_order order{next_order_id(), make_upstream_call(self, *st.worker, std::move(body)),
                       st.sink};
  st.order_id = order.id;
  self->request(st.worker->proxy, caf::infinite, dispatch_atom_v, std::move(order))
      .then([self](exchange_result& r) { on_outcome(self, r); },
            [self](caf::error& e) {
              self->state.order_id = 0;
              fail_request(self, to_api_error(e));
            });
}

} // namespace

void select_worker(request_self self) {
  auto& st = self->state;
  if (st.cancelled) {
    return finish_request(self);
  }
  auto prefer = stateful_worker(self);
  if (prefer.empty() && locate_response(self)) {
    return;
  }
  st.pinned = !prefer.empty();
  st.svc->tracker->update(st.in->request_id, services::request_phase::selecting);
  selection sel;
  sel.model = st.facts.model.value_or("");
  sel.role = st.role;
  sel.exclude = st.tried;
  sel.routing_key = routing_key(st.in->req);
  sel.prompt = request_prompt(st.in, st.in->req.body(), st.in->op, st.facts);
  sel.provider = protocol::api_provider(st.in->op);
  sel.prefer = std::move(prefer);
  self->request(st.svc->regular_policy, caf::infinite, select_atom_v, std::move(sel))
      .then([self](worker_entry_ptr& w) { dispatch(self, std::move(w)); },
            [self](caf::error& e) {
              auto& st = self->state;
              if (st.held) {
                // No other worker to try: the client gets the last one's own answer.
                st.sink = std::move(st.held);
                st.status = st.sink->status();
                st.sink->release_held();
                return finish_request(self);
              }
              // After a failed attempt, running out of workers is that failure's fault.
              fail_request(self, st.last_failure ? *st.last_failure : to_api_error(e));
            });
}

namespace {

/// Parses the request and decides how it is served.
void start(request_self self) {
  auto& st = self->state;
  const auto& op = protocol::info(st.in->op);
  if (op.has_body) {
    auto scan = protocol::scan_and_validate(st.in->op, st.in->req.body());
    if (scan.error) {
      return fail_request(self, *scan.error);
    }
    st.facts = std::move(scan.facts);
  }
  auto model = st.facts.model.value_or("");
  if (!model.empty()) {
    st.svc->tracker->set_model(st.in->request_id, model);
  }
  auto fleet = st.svc->fleet->get();
  auto service = fleet->service_of(model);
  if (!model.empty() && !service.known) {
    return fail_request(self, {protocol::error_code::model_not_found,
                               "the model '" + model + "' does not exist", "model"});
  }
  // A model with regular workers is served by them; one with only a prefill/decode pair, by
  // the pair. Of the other endpoints, `/health_generate` checks a pair and the model and
  // server info come from a prefill worker; the rest need regular workers.
  if (service.pd && !service.regular) {
    if (op.pd_capable || st.in->op == protocol::operation::health_generate) {
      return start_pd(self);
    }
    switch (st.in->op) {
    case protocol::operation::get_model_info:
    case protocol::operation::get_server_info:
      st.role = protocol::worker_type::prefill;
      break;
    case protocol::operation::responses_get:
    case protocol::operation::responses_delete:
    case protocol::operation::responses_cancel:
    case protocol::operation::responses_input_items:
      // A response is stored by the decode worker that wrote it.
      st.role = protocol::worker_type::decode;
      break;
    default:
      break;
    }
  }
  select_worker(self);
}

request_actor::behavior_type request_behavior(request_self self, services_ptr svc,
                                              std::shared_ptr<inbound_request> in) {
  auto& st = self->state;
  st.svc = std::move(svc);
  st.in = std::move(in);
  st.format = protocol::info(st.in->op).format;
  st.deadline = st.in->received + st.svc->cfg.request_timeout;
  st.svc->tracker->begin(st.in->request_id, std::string(protocol::info(st.in->op).name));
  auto addr = caf::actor_cast<caf::actor_addr>(self);
  st.in->reply->on_disconnect([addr] {
    if (auto h = caf::actor_cast<request_actor>(addr)) {
      caf::anon_send(h, cancel_atom_v);
    }
  });
  start(self);
  return {
      [self](tick_atom) {
        if (!self->state.finished) {
          select_worker(self);
        }
      },
      [self](cancel_atom) {
        auto& st = self->state;
        if (st.finished || st.cancelled) {
          return;
        }
        st.cancelled = true;
        st.status = protocol::http_status(protocol::error_code::client_closed);
        if (st.in->reply->stopped_reading()) {
          spdlog::info("[{}] the client stopped reading: no write to it progressed for {} s, "
                       "connection closed",
                       st.in->request_id, st.svc->cfg.client_write_timeout.count());
        }
        if (st.pd) {
          return cancel_pd(self);
        }
        if (st.order_id != 0) {
          // The outcome (cancelled) arrives next and finishes the request.
          self->send(st.worker->proxy, cancel_atom_v, st.order_id);
        } else {
          finish_request(self);
        }
      },
  };
}

} // namespace

void note_worker(request_self self, const std::string& worker_id) {
  auto& st = self->state;
  if (!st.worker_ids.empty()) {
    st.worker_ids += ",";
  }
  st.worker_ids += worker_id;
  st.svc->tracker->add_worker(st.in->request_id, worker_id);
}

void fail_request(request_self self, const protocol::api_error& err) {
  auto& st = self->state;
  if (st.finished) {
    return;
  }
  st.status = protocol::http_status(err.code);
  st.error = err.code;
  if (st.sink) {
    st.sink->fail(err);
  } else {
    st.in->reply->respond(
        make_error_response(err, st.format, st.in->request_id, st.in->req.version()));
  }
  finish_request(self);
}

void finish_request(request_self self) {
  auto& st = self->state;
  if (st.finished) {
    return;
  }
  st.finished = true;
  auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - st.in->received);
  auto error = error_type(st);
  spdlog::info("[{}] {} {} model={} worker={} status={} duration_ms={:.3f} ttft_ms={:.3f}{}{}",
               st.in->request_id, st.in->req.method_string(), st.in->req.target(),
               st.facts.model.value_or("-"), st.worker_ids.empty() ? "-" : st.worker_ids, st.status,
               elapsed.count() / 1000.0, st.ttft.count() / 1000.0,
               error.empty() ? "" : " error=", error);
  if (auto& m = st.svc->metrics) {
    services::request_outcome out;
    out.endpoint = protocol::info(st.in->op).name;
    out.model = model_label(st);
    out.streaming = st.facts.stream;
    out.error_type = error;
    if (st.facts.stream && error.empty() && st.ttft.count() > 0) {
      out.ttft = st.ttft;
    }
    m->on_request_end(out);
  }
  st.svc->tracker->end(st.in->request_id);
  self->quit();
}

transport::upstream_call make_upstream_call(request_self self, const worker_entry& worker,
                                            std::string body) {
  auto& st = self->state;
  transport::upstream_call call;
  call.method = st.in->req.method();
  call.target = std::string(st.in->req.target());
  call.body = std::move(body);
  call.headers = upstream_headers(st.in->req, worker, st.in->request_id, st.svc->cfg.api_key);
  call.deadline = st.deadline;
  return call;
}

protocol::api_error exchange_error(const exchange_result& r, std::chrono::seconds timeout) {
  using protocol::error_code;
  switch (r.status) {
  case exchange_status::connect_failed:
    return {error_code::bad_gateway, "the worker is unreachable: " + r.detail, {}};
  case exchange_status::broken:
    return {error_code::bad_gateway,
            r.head_received ? "the worker connection broke mid-response"
                            : "the worker closed the connection without a response",
            {}};
  case exchange_status::timeout:
    return {error_code::gateway_timeout,
            "the request did not complete within " + std::to_string(timeout.count()) + " s",
            {}};
  case exchange_status::rejected:
    return {error_code::upstream_too_large, "the worker's response exceeds the size limit", {}};
  case exchange_status::cancelled:
    return {error_code::client_closed, "the client closed the request", {}};
  case exchange_status::ok:
    break;
  }
  return {error_code::internal_error, "unexpected exchange outcome", {}};
}

request_actor spawn_request(const services_ptr& svc, std::shared_ptr<inbound_request> in) {
  return svc->sys.spawn(request_behavior, svc, std::move(in));
}

} // namespace troupe::actors
