// Responses API objects live on the worker that created them. A node learns where from the
// creates it relays (response_affinity); a request naming a response this node never saw —
// created through another cluster node, or before this node restarted — would otherwise go
// wherever the policy sends it and meet a 404 from a worker that does not store it. Instead the
// request actor first asks the eligible workers in turn, `GET /v1/responses/{id}`, and sends the
// request to the first that has it (and remembers it). Only misses pay for this. The request
// actor says what follows the search (`then`): its selection of the worker, now preferring it.

#include "actors/errors.hpp"
#include "actors/request/request_state.hpp"
#include "actors/request/upstream_headers.hpp"
#include "services/logs.hpp"
#include "transport/collect_sink.hpp"

#include <algorithm>

namespace troupe::actors {

namespace {

/// Largest lookup answer read: only its status matters, the rest is discarded.
constexpr std::size_t lookup_body_limit = 1 << 20;

/// The response a request names (its operation's row says where: the route's `{id}`, or a
/// create's `previous_response_id`); nullptr for other requests.
const std::string* named_response(const request_state& st) {
  switch (st.op->names_response) {
  case protocol::response_ref::path:
    return st.in->params.empty() ? nullptr : &st.in->params.front();
  case protocol::response_ref::previous:
    return st.facts.previous_response_id ? &*st.facts.previous_response_id : nullptr;
  case protocol::response_ref::none:
    break;
  }
  return nullptr;
}

/// One search: the response sought, the workers of `role` asked so far, and what follows.
struct lookup {
  std::string id;
  protocol::worker_type role;
  std::vector<std::string> probed;
  void (*then)(request_self);
};

void probe(request_self self, lookup l, worker_entry_ptr worker);

/// Asks the policy for the next worker not asked yet, and asks it.
void next_probe(request_self self, lookup l) {
  auto& st = self->state;
  if (st.cancelled) {
    return finish_request(self);
  }
  selection sel;
  sel.model = st.facts.model.value_or(""); // a create continuing a response names its model
  sel.role = l.role;
  sel.exclude = l.probed;
  sel.exclude.insert(sel.exclude.end(), st.tried.begin(), st.tried.end());
  sel.provider = st.op->provider;
  self->request(st.svc->regular_policy, caf::infinite, select_atom_v, std::move(sel))
      .then([self, l](worker_entry_ptr& w) mutable { probe(self, std::move(l), std::move(w)); },
            [self, l](caf::error&) {
              // Nobody has it (or nobody answered): the request goes where the policy sends
              // it, and the worker's own answer (a 404 in its words) reaches the client.
              logs::request(self->state.in->request_id).debug("no worker stores response {}", l.id);
              self->state.located = true;
              l.then(self);
            });
}

void probe(request_self self, lookup l, worker_entry_ptr worker) {
  auto& st = self->state;
  transport::upstream_call call;
  call.method = transport::http::verb::get;
  call.target = "/v1/responses/" + l.id;
  call.headers = upstream_headers(st.in->req, *worker, st.in->request_id, st.svc->cfg.api_key);
  // A worker that cannot say within a health check's time whether it has the response is
  // passed over; the request's own deadline bounds the whole search.
  call.deadline =
      std::min(st.deadline, std::chrono::steady_clock::now() + st.svc->cfg.worker.health_timeout);
  auto sink = std::make_shared<transport::collect_sink>(lookup_body_limit);
  dispatch_order order{next_order_id(), std::move(call), sink};
  note_attempt(self, std::span<const worker_entry_ptr>{&worker, 1});
  st.lookup_then = [l = std::move(l), worker, sink](request_self self,
                                                    transport::exchange_result& r) mutable {
    auto& st = self->state;
    if (st.cancelled || r.status == transport::exchange_status::cancelled) {
      return finish_request(self);
    }
    if (sink->status() / 100 == 2) {
      logs::request(st.in->request_id).debug("response {} is stored by {}", l.id, worker->id);
      st.svc->responses->remember(l.id, worker->id);
      st.located = true;
      return l.then(self);
    }
    l.probed.push_back(worker->id);
    next_probe(self, std::move(l));
  };
  st.lookup.start(*worker->channel, std::move(order), caf::actor_cast<caf::actor>(self));
}

} // namespace

std::string stateful_worker(const request_state& st) {
  auto* id = named_response(st);
  if (!id) {
    return {};
  }
  return st.svc->responses->worker_of(*id).value_or("");
}

bool locate_response(request_self self, protocol::worker_type role, void (*then)(request_self)) {
  auto& st = self->state;
  if (st.located) {
    return false;
  }
  auto* id = named_response(st);
  if (!id || id->empty()) {
    return false;
  }
  st.svc->tracker->update(st.in->track, services::request_phase::locating);
  next_probe(self, lookup{*id, role, {}, then});
  return true;
}

bool cancel_lookup(request_self self) {
  return self->state.lookup.cancel();
}

bool on_lookup_end(request_self self, std::uint64_t order, transport::exchange_result& r) {
  auto& st = self->state;
  if (!st.lookup.ends(order)) {
    return false;
  }
  auto then = std::move(st.lookup_then);
  st.lookup_then = nullptr;
  then(self, r);
  return true;
}

} // namespace troupe::actors
