// Responses API objects live on the worker that created them. A node learns where from the
// creates it relays (response_affinity); a request naming a response this node never saw —
// created through another cluster node, or before this node restarted — would otherwise go
// wherever the policy sends it and meet a 404 from a worker that does not store it. Instead the
// request actor first asks the eligible workers in turn, `GET /v1/responses/{id}`, and sends the
// request to the first that has it (and remembers it). Only misses pay for this.

#include "actors/errors.hpp"
#include "actors/request/request_state.hpp"
#include "actors/request/upstream_headers.hpp"
#include "transport/collect_sink.hpp"

#include <algorithm>
#include <spdlog/spdlog.h>

namespace troupe::actors {

namespace {

/// Largest lookup answer read: only its status matters, the rest is discarded.
constexpr std::size_t lookup_body_limit = 1 << 20;

/// The response a request names: `/v1/responses/{id}...`, or a create's
/// `previous_response_id`; nullptr for other requests.
const std::string* named_response(const request_state& st) {
  switch (st.in->op) {
  case protocol::operation::responses_get:
  case protocol::operation::responses_delete:
  case protocol::operation::responses_cancel:
  case protocol::operation::responses_input_items:
    return st.in->params.empty() ? nullptr : &st.in->params.front();
  case protocol::operation::responses_create:
    return st.facts.previous_response_id ? &*st.facts.previous_response_id : nullptr;
  default:
    return nullptr;
  }
}

void probe(request_self self, std::string id, std::vector<std::string> probed,
           worker_entry_ptr worker);

/// Asks the policy for the next worker not asked yet, and asks it.
void next_probe(request_self self, std::string id, std::vector<std::string> probed) {
  auto& st = self->state;
  if (st.cancelled) {
    return finish_request(self);
  }
  selection sel;
  sel.model = st.facts.model.value_or(""); // a create continuing a response names its model
  sel.role = st.role;
  sel.exclude = probed;
  sel.exclude.insert(sel.exclude.end(), st.tried.begin(), st.tried.end());
  sel.provider = protocol::api_provider(st.in->op);
  self->request(st.svc->regular_policy, caf::infinite, select_atom_v, std::move(sel))
      .then(
          [self, id, probed](worker_entry_ptr& w) mutable {
            probe(self, std::move(id), std::move(probed), std::move(w));
          },
          [self, id](caf::error&) {
            // Nobody has it (or nobody answered): the request goes where the policy sends
            // it, and the worker's own answer (a 404 in its words) reaches the client.
            spdlog::debug("[{}] no worker stores response {}", self->state.in->request_id, id);
            self->state.located = true;
            select_worker(self);
          });
}

void probe(request_self self, std::string id, std::vector<std::string> probed,
           worker_entry_ptr worker) {
  auto& st = self->state;
  transport::upstream_call call;
  call.method = transport::http::verb::get;
  call.target = "/v1/responses/" + id;
  call.headers = upstream_headers(st.in->req, *worker, st.in->request_id, st.svc->cfg.api_key);
  // A worker that cannot say within a health check's time whether it has the response is
  // passed over; the request's own deadline bounds the whole search.
  call.deadline =
      std::min(st.deadline, std::chrono::steady_clock::now() + st.svc->cfg.worker.health_timeout);
  auto sink = std::make_shared<transport::collect_sink>(lookup_body_limit);
  dispatch_order order{next_order_id(), std::move(call), sink};
  st.worker = worker;
  st.order_id = order.id;
  note_worker(self, worker->id);
  self->request(worker->proxy, caf::infinite, dispatch_atom_v, std::move(order))
      .then(
          [self, id, probed, worker, sink](transport::exchange_result& r) mutable {
            auto& st = self->state;
            st.order_id = 0;
            if (st.cancelled || r.status == transport::exchange_status::cancelled) {
              return finish_request(self);
            }
            if (sink->status() / 100 == 2) {
              spdlog::debug("[{}] response {} is stored by {}", st.in->request_id, id, worker->id);
              st.svc->responses->remember(id, worker->id);
              st.located = true;
              return select_worker(self);
            }
            probed.push_back(worker->id);
            next_probe(self, std::move(id), std::move(probed));
          },
          [self](caf::error& e) {
            self->state.order_id = 0;
            fail_request(self, to_api_error(e));
          });
}

} // namespace

std::string stateful_worker(request_self self) {
  auto* id = named_response(self->state);
  if (!id) {
    return {};
  }
  return self->state.svc->responses->worker_of(*id).value_or("");
}

bool locate_response(request_self self) {
  auto& st = self->state;
  if (st.located) {
    return false;
  }
  auto* id = named_response(st);
  if (!id || id->empty()) {
    return false;
  }
  st.svc->tracker->update(st.in->request_id, services::request_phase::locating);
  next_probe(self, *id, {});
  return true;
}

} // namespace troupe::actors
