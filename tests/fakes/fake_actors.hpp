#pragma once

// Fake workers and policies for actor tests on the deterministic actor system
// (tests/fakes/actor_system.hpp). A fake worker's channel keeps every dispatch order until the
// test plays the worker's answer into the order's sink and ends it; a fake policy picks from the
// workers it is given and records what it was asked. Neither touches a socket.

#include "actors/errors.hpp"
#include "actors/fleet.hpp"
#include "actors/policy.hpp"
#include "actors/worker_proxy.hpp"
#include "protocol/type_ids.hpp"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::test {

/// What a fake worker's channel was given.
struct channel_log {
  struct order {
    std::uint64_t id = 0;
    transport::upstream_call call;
    std::shared_ptr<transport::response_sink> sink;
    caf::actor reply_to; ///< Who gets the order's outcome.
    bool ended = false;  ///< Answered (`fake_worker::end`) or cancelled.
  };
  std::vector<order> orders;
  std::vector<std::uint64_t> cancels; ///< Orders whose exchange was cancelled.

  /// Ends order `id` with `r`, as a real exchange ends: its outcome goes to who started it,
  /// once.
  void end(std::uint64_t id, transport::exchange_result r) {
    for (auto& o : orders) {
      if (o.id == id && !o.ended) {
        o.ended = true;
        caf::anon_send(o.reply_to, done_atom_v, id, std::move(r));
      }
    }
  }
};

/// A worker channel that keeps every order until the test plays the worker's answer into the
/// order's sink and ends it; a cancelled order ends at once as `cancelled`, as a real exchange
/// does.
class fake_channel final : public actors::worker_channel {
public:
  explicit fake_channel(std::shared_ptr<channel_log> log) : log_(std::move(log)) {}

  std::shared_ptr<transport::exchange_control> start(actors::dispatch_order o,
                                                     caf::actor reply_to) override {
    log_->orders.push_back({o.id, o.call, o.sink, std::move(reply_to)});
    return std::make_shared<control>(log_, o.id);
  }

private:
  struct control final : transport::exchange_control {
    control(std::shared_ptr<channel_log> log, std::uint64_t id) : log(std::move(log)), id(id) {}
    void cancel() override {
      log->cancels.push_back(id);
      transport::exchange_result r;
      r.status = transport::exchange_status::cancelled;
      log->end(id, r);
    }
    std::shared_ptr<channel_log> log;
    std::uint64_t id;
  };

  std::shared_ptr<channel_log> log_;
};

/// A worker proxy that does nothing (requests reach a fake worker through its channel).
inline actors::worker_proxy_actor spawn_fake_proxy(caf::actor_system& sys) {
  return sys.spawn(
      [](actors::worker_proxy_actor::pointer self) -> actors::worker_proxy_actor::behavior_type {
        return {
            [](outcome_atom, const transport::exchange_result&, unsigned) {},
            [](idle_atom) {},
            [](done_atom, std::uint64_t, transport::exchange_result&) {},
            [](health_atom) {},
            [](breaker_atom, std::uint64_t) {},
            [](drain_atom) {},
            [self](stop_atom) { self->quit(); },
            [](inspect_atom) { return std::string{"{}"}; },
            [](inspect_atom, mailbox_atom) { return std::uint64_t{0}; },
        };
      });
}

/// One worker of a test fleet: its entry (healthy, with a fake channel and proxy) and what it was
/// sent. The test answers its orders: `respond`, `stream`, `fail`.
class fake_worker {
public:
  fake_worker(caf::actor_system& sys, std::string id, protocol::worker_type type,
              std::vector<std::string> models)
      : log_(std::make_shared<channel_log>()) {
    auto w = std::make_shared<actors::worker_entry>();
    w->id = id;
    w->spec.url = "http://" + id + ":8000";
    w->spec.type = type;
    w->url = protocol::base_url{"http", id, 8000, ""};
    w->models = std::move(models);
    w->live = std::make_shared<actors::worker_live>();
    w->live->health = actors::health_state::healthy;
    w->proxy = spawn_fake_proxy(sys);
    w->channel = std::make_shared<fake_channel>(log_);
    entry_ = std::move(w);
  }

  const actors::worker_entry_ptr& entry() const { return entry_; }
  const std::string& id() const { return entry_->id; }
  const channel_log& log() const { return *log_; }

  /// Orders received so far.
  std::size_t orders() const { return log_->orders.size(); }

  /// Order `i` (the first is 0).
  const channel_log::order& order(std::size_t i = 0) const { return log_->orders.at(i); }

  /// True when order `i` was cancelled.
  bool cancelled(std::size_t i = 0) const {
    auto id = order(i).id;
    return std::find(log_->cancels.begin(), log_->cancels.end(), id) != log_->cancels.end();
  }

  /// Plays a whole response into order `i`'s sink and ends the order.
  void respond(std::size_t i, unsigned status, std::string body,
               std::string content_type = "application/json") const {
    auto& o = order(i);
    transport::exchange_result r;
    r.http_status = status;
    r.head_received = true;
    if (head(o, status, content_type)) {
      r.body_bytes = body.size();
      if (!o.sink->on_body(body)) {
        r.status = transport::exchange_status::rejected;
      } else {
        o.sink->on_complete();
      }
    }
    end(i, std::move(r));
  }

  /// Plays the head of an event stream and `events` (whole SSE events) into order `i`'s sink;
  /// ends the stream and the order when `finish`.
  void stream(std::size_t i, const std::vector<std::string>& events, bool finish = true) const {
    auto& o = order(i);
    if (!streaming_.count(i)) {
      streaming_.insert({i, true});
      head(o, 200, "text/event-stream");
    }
    for (auto& e : events) {
      o.sink->on_body(e);
    }
    if (finish) {
      o.sink->on_complete();
      transport::exchange_result r;
      r.http_status = 200;
      r.head_received = true;
      end(i, std::move(r));
    }
  }

  /// Ends order `i` as failed with `status` (nothing reached its sink unless `head_received`).
  void fail(std::size_t i, transport::exchange_status status, bool head_received = false) const {
    transport::exchange_result r;
    r.status = status;
    r.head_received = head_received;
    r.detail = "the test said so";
    end(i, std::move(r));
  }

private:
  bool head(const channel_log::order& o, unsigned status, const std::string& content_type) const {
    transport::http::response_header<> h;
    h.result(status);
    h.set(transport::http::field::content_type, content_type);
    return o.sink->on_head(h);
  }

  void end(std::size_t i, transport::exchange_result r) const {
    log_->end(order(i).id, std::move(r));
  }

  std::shared_ptr<channel_log> log_;
  actors::worker_entry_ptr entry_;
  mutable std::map<std::size_t, bool> streaming_;
};

/// What a fake policy was asked.
struct policy_log {
  std::vector<actors::selection> asked;
};

/// A policy that picks, among the workers `*pool` holds, the preferred one when eligible, else
/// the first eligible: of the asked role, serving the model, routable, not excluded.
/// `model_not_found` / `no_worker_available` like a real one when none is.
inline actors::policy_actor
spawn_fake_policy(caf::actor_system& sys,
                  std::shared_ptr<std::vector<actors::worker_entry_ptr>> pool,
                  std::shared_ptr<policy_log> log) {
  return sys.spawn([pool,
                    log](actors::policy_actor::pointer) -> actors::policy_actor::behavior_type {
    return {
        [pool, log](select_atom, actors::selection& sel) -> caf::result<actors::worker_entry_ptr> {
          log->asked.push_back(sel);
          std::vector<actors::worker_entry_ptr> eligible;
          bool known = false;
          for (auto& w : *pool) {
            if (w->spec.type != sel.role || !w->serves(sel.model)) {
              continue;
            }
            known = true;
            if (w->live->routable() &&
                std::find(sel.exclude.begin(), sel.exclude.end(), w->id) == sel.exclude.end()) {
              eligible.push_back(w);
            }
          }
          for (auto& w : eligible) {
            if (w->id == sel.prefer) {
              return w;
            }
          }
          if (!eligible.empty()) {
            return eligible.front();
          }
          auto code = known || sel.model.empty() ? protocol::error_code::no_worker_available
                                                 : protocol::error_code::model_not_found;
          return actors::make_caf_error(code, "fake policy: no worker for '" + sel.model + "'");
        },
        [](publish_atom, actors::fleet_ptr&) {},
        [](inspect_atom) { return std::string{"{}"}; },
        [](inspect_atom, mailbox_atom) { return std::uint64_t{0}; },
        [](prefix_atom, bool) { return actors::prefix_drain{}; },
        [](prefix_atom, const protocol::prefix_update&) {},
        [](prefix_atom, actors::prefix_sink&) {},
        [](placement_atom, const protocol::placement_ask& a) {
          return protocol::placement_answer{a.id, {}};
        },
        [](placement_atom, actors::placement_setup&) {},
    };
  });
}

} // namespace troupe::test
