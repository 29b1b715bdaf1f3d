// smg's cache and load utilities: `POST /flush_cache` and `GET /get_loads` send one call to
// every self-hosted worker at once, through its proxy, and join the answers into one.

#include "actors/errors.hpp"
#include "actors/fleet.hpp"
#include "actors/messages.hpp"
#include "actors/request/upstream_headers.hpp"
#include "gateway/endpoints/endpoints.hpp"
#include "services/logs.hpp"
#include "transport/collect_sink.hpp"

#include <caf/event_based_actor.hpp>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace troupe::gateway {

namespace {

using verb = transport::http::verb;
using json = nlohmann::json;

/// Largest worker answer read (a load report or a flush acknowledgement).
constexpr std::size_t answer_limit = 1 << 20;

/// What one worker answered a fanned-out call.
struct worker_answer {
  actors::worker_entry_ptr worker;
  transport::exchange_result result;
  std::shared_ptr<transport::collect_sink> sink;

  /// Empty on a 2xx answer, else why the call failed.
  std::string failure() const {
    if (result.status != transport::exchange_status::ok) {
      auto why = std::string(transport::to_string(result.status));
      return result.detail.empty() ? why : why + ": " + result.detail;
    }
    if (sink->status() / 100 != 2) {
      return "the worker answered HTTP " + std::to_string(sink->status());
    }
    return {};
  }
};

/// Joins the answers; called once, with every worker's, in fleet order.
using join_fn = std::function<void(std::vector<worker_answer>&)>;

/// Sends `method target` (no body) to every self-hosted worker of the fleet at once, each
/// bounded by the health-check timeout, and calls `join` with all the answers. External
/// providers are left out: they have no such routes. One short-lived actor asks every worker
/// and collects the answers, one message at a time: no lock, one spawn per call.
void fan_out(const http_context& ctx, verb method, std::string target, join_fn join) {
  auto fleet = ctx.svc->fleet->get();
  auto answers = std::make_shared<std::vector<worker_answer>>();
  for (auto& w : fleet->workers) {
    if (w->spec.provider == protocol::provider_kind::none) {
      answers->push_back({w, {}, std::make_shared<transport::collect_sink>(answer_limit)});
    }
  }
  if (answers->empty()) {
    return join(*answers);
  }
  auto deadline = std::chrono::steady_clock::now() + ctx.svc->cfg.worker.health_timeout;
  ctx.svc->sys.spawn([ctx, method, target = std::move(target), join = std::move(join), answers,
                      deadline](caf::event_based_actor* self) -> caf::behavior {
    // Which answer each order fills (the channel reports the order id).
    auto slot_of = std::make_shared<std::unordered_map<std::uint64_t, std::size_t>>();
    for (std::size_t i = 0; i < answers->size(); ++i) {
      auto& a = (*answers)[i];
      transport::upstream_call call;
      call.method = method;
      call.target = target;
      call.headers =
          actors::upstream_headers(ctx.req, *a.worker, ctx.request_id, ctx.svc->cfg.api_key);
      call.deadline = deadline;
      actors::dispatch_order order{actors::next_order_id(), std::move(call), a.sink};
      slot_of->emplace(order.id, i);
      a.worker->channel->start(std::move(order), caf::actor_cast<caf::actor>(self));
    }
    return {[self, join, answers, slot_of](done_atom, std::uint64_t order,
                                           transport::exchange_result& r) {
      auto it = slot_of->find(order);
      if (it == slot_of->end()) {
        return;
      }
      (*answers)[it->second].result = std::move(r);
      slot_of->erase(it);
      if (slot_of->empty()) {
        join(*answers);
        self->quit();
      }
    }};
  });
}

/// `POST /flush_cache`: every worker empties its prefix cache. 200 when all did, 206 (smg's
/// Partial Content) when some did not, with who did and why the others did not.
void flush_cache(http_context& ctx) {
  fan_out(ctx, verb::post, "/flush_cache", [ctx](std::vector<worker_answer>& answers) {
    json ok = json::array();
    json failed = json::array();
    for (auto& a : answers) {
      if (auto why = a.failure(); why.empty()) {
        ok.push_back(a.worker->spec.url);
      } else {
        failed.push_back({{"worker", a.worker->spec.url}, {"error", why}});
      }
    }
    std::string message;
    if (answers.empty()) {
      message = "No workers registered; nothing to flush";
    } else if (failed.empty()) {
      message = "Successfully flushed cache on all " + std::to_string(answers.size()) + " workers";
    } else {
      message = "Cache flush: " + std::to_string(ok.size()) + " succeeded, " +
                std::to_string(failed.size()) + " failed";
    }
    logs::http(ctx.request_id).info("flush_cache: {}", message);
    auto status = failed.empty() ? 200 : 206;
    ctx.json(status, json{{"successful", std::move(ok)},
                          {"failed", std::move(failed)},
                          {"total_workers", answers.size()},
                          {"message", message}}
                         .dump());
  });
}

/// The load a worker's `GET /get_load` reports: the tokens in use summed over its data-parallel
/// ranks (SGLang answers one object per rank), or -1 when the answer says nothing usable.
long long reported_load(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  auto tokens = [](const json& rank) -> std::optional<long long> {
    if (rank.is_object()) {
      for (const char* key : {"num_tokens", "load"}) {
        if (auto it = rank.find(key); it != rank.end() && it->is_number()) {
          return it->get<long long>();
        }
      }
    }
    return std::nullopt;
  };
  if (j.is_array()) {
    long long sum = 0;
    for (auto& rank : j) {
      auto n = tokens(rank);
      if (!n) {
        return -1;
      }
      sum += *n;
    }
    return j.empty() ? -1 : sum;
  }
  return tokens(j).value_or(-1);
}

/// `GET /get_loads`: every worker's own load report, beside the requests this gateway has in
/// flight to it.
void get_loads(http_context& ctx) {
  fan_out(ctx, verb::get, "/get_load", [ctx](std::vector<worker_answer>& answers) {
    json loads = json::array();
    std::size_t ok = 0;
    for (auto& a : answers) {
      auto why = a.failure();
      auto load = why.empty() ? reported_load(a.sink->body()) : -1;
      ok += load >= 0 ? 1 : 0;
      json entry{{"worker", a.worker->spec.url},
                 {"worker_type", protocol::to_string(a.worker->spec.type)},
                 {"load", load},
                 {"in_flight", a.worker->live->load()}};
      if (load < 0) {
        entry["error"] = why.empty() ? "the worker's load report is not understood" : why;
      }
      loads.push_back(std::move(entry));
    }
    ctx.json(200, json{{"loads", std::move(loads)},
                       {"total_workers", answers.size()},
                       {"successful", ok},
                       {"failed", answers.size() - ok}}
                      .dump());
  });
}

} // namespace

void add_fleet_op_routes(route_table& routes) {
  routes.add(verb::post, "/flush_cache", flush_cache);
  routes.add(verb::get, "/get_loads", get_loads);
}

} // namespace troupe::gateway
