// The request actor: one per client request. What every request goes through is written here
// once — parse and validate, decide how the model is served, pick workers, retry on other
// workers, answer when none is left, log and count the outcome. How one attempt reaches its
// workers is the request's path (actors/request/request_path.hpp): one worker, or a
// prefill/decode pair.

#include "actors/request.hpp"

#include "actors/caf_log_context.hpp"
#include "actors/errors.hpp"
#include "actors/jitter.hpp"
#include "actors/pd_only_refusal.hpp"
#include "actors/request/request_hints.hpp"
#include "actors/request/request_state.hpp"
#include "actors/request/retry_policy.hpp"
#include "actors/request/upstream_headers.hpp"
#include "protocol/validation.hpp"
#include "services/logs.hpp"

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

/// What a policy is asked for a worker of `role`: the request's model, routing key, prompt
/// and API provider, the workers that failed it, and the one storing its state.
selection selection_for(const request_state& st, protocol::worker_type role,
                        const std::string& prefer) {
  selection sel;
  sel.model = st.facts.model.value_or("");
  sel.role = role;
  sel.exclude = st.tried;
  auto hints = affinity_hints_of(st.in->req);
  sel.routing_key = std::move(hints.routing_key);
  sel.target = std::move(hints.target);
  sel.prompt = st.prompt;
  sel.provider = st.op->provider;
  sel.prefer = prefer;
  return sel;
}

/// The workers of the last attempt, for log lines: `worker w-1`, `pair w-p+w-d`.
std::string last_attempt(const request_state& st) {
  auto ids = st.worker_ids.substr(st.worker_ids.rfind(',') + 1);
  return (ids.find('+') == std::string::npos ? "worker " : "pair ") + ids;
}

void select_workers(request_self self);

/// Appends `us` as milliseconds with three decimals (what `{:.3f}` of `us / 1000.0` prints).
void append_ms(fmt::memory_buffer& out, std::chrono::microseconds us) {
  auto frac = fmt::format_int(us.count() % 1000 + 1000); // "1xyz": the three digits, padded
  auto whole = fmt::format_int(us.count() / 1000);
  logs::put(out, {whole.data(), whole.size()});
  out.push_back('.');
  logs::put(out, {frac.data() + 1, frac.size() - 1});
}

/// Puts the request's closing log line into `out`: `<method> <target> model=<m> worker=<ids>
/// status=<s> duration_ms=<ms> ttft_ms=<ms>[ error=<type>]`, by appends (a format string parsed
/// per request cost ~3k instructions of the ~80k a request costs).
void summary_line(fmt::memory_buffer& out, const request_state& st,
                  std::chrono::microseconds elapsed, std::string_view error) {
  auto put = [&out](std::string_view s) { logs::put(out, s); };
  put(st.in->req.method_string());
  put(" ");
  put(st.in->req.target());
  put(" model=");
  put(st.facts.model ? std::string_view(*st.facts.model) : "-");
  put(" worker=");
  put(st.worker_ids.empty() ? std::string_view("-") : std::string_view(st.worker_ids));
  put(" status=");
  auto status = fmt::format_int(st.status);
  put({status.data(), status.size()});
  put(" duration_ms=");
  append_ms(out, elapsed);
  put(" ttft_ms=");
  append_ms(out, st.ttft);
  if (!error.empty()) {
    put(" error=");
    put(error);
  }
}

/// Every policy of the attempt answered: start it, or answer why no worker can take it.
void on_picked(request_self self) {
  auto& st = self->state;
  if (--st.pending_picks > 0) {
    return;
  }
  if (st.cancelled) {
    return finish_request(self);
  }
  for (auto& err : st.pick_errors) {
    if (!err) {
      continue;
    }
    // No other worker to try: the client gets the last one's own answer, if it was kept...
    if (auto status = st.path->release_kept()) {
      st.status = *status;
      return finish_request(self);
    }
    // ...and after a failed attempt, running out of workers is that failure's fault.
    return fail_request(self, st.last_failure ? *st.last_failure : *err);
  }
  st.svc->tracker->update(st.in->track, services::request_phase::dispatched);
  std::span<worker_entry_ptr> picked(st.picked.data(), st.picked.size());
  note_attempt(self, picked);
  st.attempting = true;
  st.path->start(self, picked);
}

/// Asks the path's policies for the workers of the next attempt, all at once (a policy with a
/// direct picker answers at once, without a message).
void select_workers(request_self self) {
  auto& st = self->state;
  if (st.cancelled) {
    return finish_request(self);
  }
  auto prefer = stateful_worker(st);
  if (prefer.empty() && locate_response(self, st.path->stateful_role(), select_workers)) {
    return;
  }
  st.pinned = !prefer.empty();
  st.svc->tracker->update(st.in->track, services::request_phase::selecting);
  auto picks = st.path->picks();
  st.pending_picks = static_cast<unsigned>(picks.size());
  st.picked.assign(picks.size(), nullptr);
  st.pick_errors.assign(picks.size(), std::nullopt);
  for (std::size_t i = 0; i < picks.size(); ++i) {
    auto sel = selection_for(st, picks[i].role, prefer);
    if (picks[i].picker) {
      if (auto r = picks[i].picker->pick(sel)) {
        if (*r) {
          st.picked[i] = std::move(**r);
        } else {
          st.pick_errors[i] = to_api_error(r->error());
        }
        on_picked(self); // the last one starts the attempt
        continue;
      }
    }
    self->request(picks[i].policy, caf::infinite, select_atom_v, std::move(sel))
        .then(
            [self, i](worker_entry_ptr& w) {
              self->state.picked[i] = std::move(w);
              on_picked(self);
            },
            [self, i](caf::error& e) {
              self->state.pick_errors[i] = to_api_error(e);
              on_picked(self);
            });
  }
}

/// Ends the request with the attempt's failure `err` (or the worker's answer it kept).
void answer(request_self self, const protocol::api_error& err, bool worker_answer) {
  auto& st = self->state;
  auto status = st.path->fail(self, err, worker_answer);
  if (!status) {
    // The attempt never reached the client's response (a pair refused before its legs ran):
    // the request actor answers.
    st.in->reply->respond(
        make_error_response(err, st.op->format, st.in->request_id, st.in->req.version()));
  }
  st.status = status.value_or(protocol::http_status(err.code));
  if (!worker_answer) {
    st.error = err.code; // the gateway's own error (a relayed worker error is the worker's)
  }
  finish_request(self);
}

/// Parses the request and decides how it is served.
void start(request_self self) {
  auto& st = self->state;
  if (st.op->has_body) {
    auto scan = protocol::scan_and_validate(st.in->op, st.in->req.body());
    if (scan.error) {
      return fail_request(self, *scan.error);
    }
    st.facts = std::move(scan.facts);
  }
  auto model = st.facts.model.value_or("");
  if (!model.empty()) {
    st.svc->tracker->set_model(st.in->track, model);
  }
  auto service = st.svc->fleet->get()->service_of(model);
  if (!model.empty() && !service.known) {
    return fail_request(self, {protocol::error_code::model_not_found,
                               "the model '" + model + "' does not exist", "model"});
  }
  // A model with regular workers is served by them; one with only prefill/decode workers as its
  // operation's row says: by a pair, by one prefill or decode worker, or (needing a regular
  // worker) not at all. What such a model cannot serve is refused here, saying why, rather than
  // left to a selection that finds no regular worker and calls the model unknown.
  auto role = protocol::worker_type::regular;
  bool pair = false;
  if (service.known && !service.regular) {
    if (auto err = pd_only_refusal(*st.op, model, service)) {
      return fail_request(self, *err);
    }
    switch (st.op->pd) {
    case protocol::pd_service::pair:
      pair = true;
      break;
    case protocol::pd_service::prefill:
      role = protocol::worker_type::prefill;
      break;
    case protocol::pd_service::decode:
      role = protocol::worker_type::decode;
      break;
    case protocol::pd_service::none:
      break;
    }
  }
  st.path = pair ? make_pd_path(*st.svc) : make_single_path(*st.svc, role);
  if (auto err = st.path->prepare(self)) {
    return fail_request(self, *err);
  }
  select_workers(self);
}

void on_cancel(request_self self) {
  auto& st = self->state;
  if (st.finished || st.cancelled) {
    return;
  }
  st.cancelled = true;
  st.status = protocol::http_status(protocol::error_code::client_closed);
  if (st.in->reply->stopped_reading()) {
    logs::request(st.in->request_id)
        .info("the client stopped reading: no write to it progressed for {} s, "
              "connection closed",
              st.svc->cfg.client_write_timeout.count());
  }
  // With an exchange in flight, its end (cancelled) finishes the request.
  if (!(st.path && st.path->cancel(self)) && !cancel_lookup(self)) {
    finish_request(self);
  }
}

request_actor::behavior_type request_behavior(request_self self, services_ptr svc,
                                              std::shared_ptr<inbound_request> in) {
  auto& st = self->state;
  st.svc = std::move(svc);
  st.in = std::move(in);
  st.op = &protocol::info(st.in->op);
  st.deadline = st.in->received + st.svc->cfg.request_timeout;
  if (!st.in->track) { // else tracked since admission let it wait
    st.in->track = st.svc->tracker->begin(st.in->request_id, st.op->name);
  }
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
          select_workers(self);
        }
      },
      [self](cancel_atom) { on_cancel(self); },
      [self](done_atom, std::uint64_t order, transport::exchange_result& r) {
        if (!on_lookup_end(self, order, r) && self->state.path) {
          self->state.path->on_exchange_end(self, order, r);
        }
      },
  };
}

} // namespace

void attempt_done(request_self self, attempt_end end) {
  auto& st = self->state;
  st.attempting = false;
  st.ttft = end.ttft;
  if (st.cancelled || end.cancelled) {
    // The status the client got: its head's, or none (499).
    st.status =
        end.status ? end.status : protocol::http_status(protocol::error_code::client_closed);
    return finish_request(self);
  }
  st.status = end.status;
  if (!end.failure) {
    return finish_request(self);
  }
  const auto& err = *end.failure;
  auto who = last_attempt(st);
  auto now = std::chrono::steady_clock::now();
  if (end.retry == retry_kind::after_backoff && may_retry(st)) {
    // A retryable status, kept from the client: another worker gets the request after a
    // backoff; when the wait would outlast the deadline, the client gets the answer as the
    // worker gave it.
    auto delay = retry_backoff(st.svc->cfg.retry, st.backoffs, jitter_draw());
    if (now + delay < st.deadline) {
      logs::request(st.in->request_id)
          .info("{} answered {}: retrying on another worker in {} ms", who, end.status,
                delay.count());
      st.tried.insert(st.tried.end(), end.failed_workers.begin(), end.failed_workers.end());
      st.last_failure.reset();
      ++st.backoffs;
      if (st.svc->metrics) {
        st.svc->metrics->on_retry(true);
      }
      if (delay.count() == 0) {
        return select_workers(self);
      }
      st.svc->tracker->update(st.in->track, services::request_phase::backing_off);
      self->delayed_send(self, delay, tick_atom_v);
      return;
    }
    return answer(self, err, end.worker_answer);
  }
  logs::request(st.in->request_id)
      .warn("{} failed: {}", who, end.detail.empty() ? err.message : end.detail);
  if (end.retry == retry_kind::at_once && may_retry(st) && now < st.deadline) {
    st.tried.insert(st.tried.end(), end.failed_workers.begin(), end.failed_workers.end());
    st.last_failure = err;
    st.path->drop_kept();
    if (st.svc->metrics) {
      st.svc->metrics->on_retry(false);
    }
    return select_workers(self);
  }
  answer(self, err, end.worker_answer);
}

bool may_retry(const request_state& st) {
  return st.tried.size() < st.svc->cfg.retry.max_retries;
}

void note_attempt(request_self self, std::span<const worker_entry_ptr> workers) {
  auto& st = self->state;
  if (!st.worker_ids.empty()) {
    st.worker_ids += ",";
  }
  for (std::size_t i = 0; i < workers.size(); ++i) {
    if (i > 0) {
      st.worker_ids += '+';
    }
    st.worker_ids += workers[i]->id;
    // The worker's id shared with its entry: no copy per request.
    st.svc->tracker->add_worker(st.in->track,
                                std::shared_ptr<const std::string>(workers[i], &workers[i]->id));
  }
}

void fail_request(request_self self, const protocol::api_error& err) {
  auto& st = self->state;
  if (st.finished) {
    return;
  }
  auto status = st.path ? st.path->fail(self, err, false) : std::nullopt;
  if (!status) {
    st.in->reply->respond(
        make_error_response(err, st.op->format, st.in->request_id, st.in->req.version()));
  }
  st.status = status.value_or(protocol::http_status(err.code));
  st.error = err.code;
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
  if (auto log = logs::request(st.in->request_id); log.should_log(spdlog::level::info)) {
    fmt::memory_buffer line; // on the stack for a line of up to 250 bytes
    summary_line(line, st, elapsed, error);
    log.write(spdlog::level::info, {line.data(), line.size()});
  }
  if (auto& m = st.svc->metrics) {
    services::request_outcome out;
    out.endpoint = st.op->name;
    out.model = model_label(st);
    out.streaming = st.facts.stream;
    out.error_type = error;
    if (st.facts.stream && error.empty() && st.ttft.count() > 0) {
      out.ttft = st.ttft;
    }
    m->on_request_end(out);
  }
  st.svc->tracker->end(st.in->track);
  self->quit();
}

transport::upstream_call make_upstream_call(request_self self, const worker_entry& worker,
                                            transport::call_body body) {
  auto& st = self->state;
  transport::upstream_call call;
  // A HEAD reaches a proxied route only as its GET's (route_table::find): the worker is asked
  // for the GET, and the client's connection, which knows it asked a HEAD, gets the head alone.
  auto method = st.in->req.method();
  call.method = method == transport::http::verb::head ? transport::http::verb::get : method;
  call.target = std::string(st.in->req.target());
  call.body = std::move(body);
  call.headers = upstream_headers(st.in->req, worker, st.in->request_id, st.svc->cfg.api_key);
  call.deadline = st.deadline;
  return call;
}

std::shared_ptr<relay_sink> make_relay_sink(request_self self,
                                            std::shared_ptr<transport::reply_channel> reply,
                                            const std::string& worker_id) {
  auto& st = self->state;
  response_observer observer;
  if (st.op->creates_response) {
    observer = services::remember_response_id(st.svc->responses, worker_id);
  }
  // The request id shared with the request (no copy per attempt).
  auto sink = std::make_shared<relay_sink>(
      std::move(reply), std::shared_ptr<const std::string>(st.in, &st.in->request_id),
      st.op->format, st.svc->cfg.max_response_size, st.svc->cfg.max_error_response_size,
      std::move(observer));
  sink->track(st.in->track);
  return sink;
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
  case exchange_status::no_resources:
    return {error_code::out_of_resources,
            "the gateway cannot open a connection to a worker now (" + r.detail + "); retry later",
            {}};
  case exchange_status::ok:
    break;
  }
  return {error_code::internal_error, "unexpected exchange outcome", {}};
}

bool untouched(const exchange_result& r) {
  return r.status == exchange_status::connect_failed ||
         (r.status == exchange_status::broken && !r.head_received);
}

request_actor spawn_request(const services_ptr& svc, std::shared_ptr<inbound_request> in) {
  auto actor = svc->sys.spawn(request_behavior, svc, std::move(in));
  drop_caf_log_context();
  return actor;
}

} // namespace troupe::actors
