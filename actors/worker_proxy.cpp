#include "actors/worker_proxy.hpp"

#include "actors/jitter.hpp"
#include "actors/pooled_channel.hpp"
#include "actors/send_later.hpp"
#include "services/logs.hpp"
#include "transport/collect_sink.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

namespace troupe::actors {

namespace {

using clock_type = std::chrono::steady_clock;
using transport::exchange_result;
using transport::exchange_status;

/// Largest body accepted from a health check or a model listing.
constexpr std::size_t probe_body_limit = 1024 * 1024;

struct worker_proxy_state {
  static inline const char* name = "worker_proxy";

  std::string id;
  protocol::checked_spec spec;
  std::shared_ptr<transport::upstream_pool> pool;
  std::shared_ptr<pooled_channel> channel; ///< How requests reach the worker.
  std::shared_ptr<worker_live> live;
  worker_listener listener;
  worker_proxy_config cfg;

  /// Internal probes (health checks, model discovery): what to do with their outcome.
  struct probe {
    std::shared_ptr<transport::upstream_exchange> exchange;
    std::shared_ptr<transport::collect_sink> sink;
    std::function<void(const exchange_result&, transport::collect_sink&)> then;
  };
  std::unordered_map<std::uint64_t, probe> probes;

  bool draining = false; ///< Removed: no health checks, idle connections closed.
  bool stopping = false; ///< Node shutdown: quit once no exchange is in flight.
  bool models_known = false;
  bool models_warned = false; ///< The first failed discovery was logged as a warning.
  /// The models were just found: the next passed check makes the worker healthy, as a new
  /// worker's first, even when the failed discoveries before made it unhealthy.
  bool just_discovered = false;
  /// While the models are unknown, the next check comes after this (doubling from 1 s up to
  /// the health interval): a worker that starts after the gateway is found in seconds.
  std::chrono::milliseconds discovery_retry{std::chrono::seconds{1}};
  bool reported = false; ///< What the worker says about itself was asked for.
  std::vector<std::string> models;
  bool check_running = false;
  /// The last probe could not open a connection for lack of the gateway's own resources
  /// (warned once until a probe gets through).
  bool probe_starved = false;
  unsigned checks_passed = 0;      ///< Consecutive.
  unsigned checks_failed = 0;      ///< Consecutive.
  unsigned cb_successes = 0;       ///< Consecutive successes while half-open.
  std::uint64_t cb_generation = 0; ///< Ignores stale half-open timers.
};

using self_ptr = worker_proxy_actor::stateful_pointer<worker_proxy_state>;

/// Headers that authenticate the gateway to the worker.
transport::header_block auth_headers(const protocol::worker_spec& spec) {
  transport::header_block h;
  if (spec.api_key.empty()) {
    return h;
  }
  if (spec.provider == protocol::provider_kind::anthropic) {
    h.add("x-api-key", spec.api_key);
    h.add("anthropic-version", "2023-06-01");
  } else {
    h.add("authorization", "Bearer ", spec.api_key);
  }
  return h;
}

void start_probe(self_ptr self, std::string path,
                 std::function<void(const exchange_result&, transport::collect_sink&)> then) {
  auto& st = self->state;
  transport::upstream_call call;
  call.method = transport::http::verb::get;
  call.target = st.spec.url.path + path;
  call.headers = auth_headers(st.spec.spec);
  call.deadline = clock_type::now() + st.cfg.health_timeout;
  auto sink = std::make_shared<transport::collect_sink>(probe_body_limit);
  auto id = next_order_id();
  auto handle = caf::actor_cast<worker_proxy_actor>(self);
  auto ex = transport::upstream_exchange::start(
      st.pool, std::move(call), sink,
      [handle, id](exchange_result r) { caf::anon_send(handle, done_atom_v, id, std::move(r)); });
  st.probes.emplace(id, worker_proxy_state::probe{std::move(ex), std::move(sink), std::move(then)});
}

void set_health(self_ptr self, health_state next) {
  auto& st = self->state;
  auto prev = st.live->health.exchange(next);
  if (prev != next) {
    logs::proxy().info("worker {} ({}) is now {} (was {})", st.id, st.spec.spec.url,
                       to_string(next), to_string(prev));
  }
}

void record_check(self_ptr self, bool passed, const std::string& why) {
  auto& st = self->state;
  st.check_running = false;
  bool just_discovered = std::exchange(st.just_discovered, false);
  if (passed) {
    st.checks_failed = 0;
    ++st.checks_passed;
    auto h = st.live->health.load();
    // A new worker is healthy on its first passed check (so is one whose models were only
    // just found); a failed one needs the threshold.
    if (h == health_state::unknown || just_discovered ||
        (h == health_state::unhealthy && st.checks_passed >= st.cfg.health_success_threshold)) {
      set_health(self, health_state::healthy);
    }
    return;
  }
  st.checks_passed = 0;
  ++st.checks_failed;
  logs::proxy().debug("worker {} health check failed ({}/{}): {}", st.id, st.checks_failed,
                      st.cfg.health_failure_threshold, why);
  if (st.checks_failed >= st.cfg.health_failure_threshold) {
    set_health(self, health_state::unhealthy);
  }
}

std::string describe(const exchange_result& r, const transport::collect_sink& sink) {
  if (r.status != exchange_status::ok) {
    return std::string(to_string(r.status)) + (r.detail.empty() ? "" : ": " + r.detail);
  }
  return "status " + std::to_string(sink.status());
}

void check_health(self_ptr self);

/// A discovery that found no model: a failed check, and once per worker a warning saying why
/// it is not routable and what makes it so (at debug level every check says it, as others).
void discovery_failed(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.models_warned) {
    st.models_warned = true;
    logs::proxy().warn(
        "worker {} ({}) is not routable: no model known ({}); asked again at "
        "its next health checks (from 1 s, then up to every {} s), or register "
        "it with a model_id",
        st.id, st.spec.spec.url, why,
        std::chrono::duration_cast<std::chrono::seconds>(st.cfg.health_interval).count());
  }
  record_check(self, false, why);
}

/// The engine a model listing names (`owned_by` of its first model, as smg detects it).
std::optional<protocol::engine_runtime> runtime_in_listing(const nlohmann::json& listing) {
  if (!listing.is_object() || !listing.contains("data") || !listing["data"].is_array() ||
      listing["data"].empty() || !listing["data"][0].is_object()) {
    return std::nullopt;
  }
  auto owner = listing["data"][0].value("owned_by", std::string{});
  if (owner == "vllm") {
    return protocol::engine_runtime::vllm;
  }
  if (owner == "sglang" || owner == "nvidia") {
    return protocol::engine_runtime::sglang;
  }
  return std::nullopt;
}

/// Publishes what the worker says about itself, asking a vLLM engine for its KV config
/// (`/get_server_info` `kv_transfer_config`, where it shows it) when the registration did not
/// give it; then `next`.
void learn_report(self_ptr self, std::optional<protocol::engine_runtime> runtime,
                  std::function<void()> next) {
  auto& st = self->state;
  st.reported = true;
  auto report = std::make_shared<worker_report>();
  report->runtime = runtime;
  const auto& spec = st.spec.spec;
  auto effective = spec.runtime ? spec.runtime : runtime;
  bool ask_kv = effective == protocol::engine_runtime::vllm &&
                (spec.connector == protocol::kv_connector::unset || spec.kv_engine_id.empty());
  if (runtime) {
    logs::proxy().info("worker {} ({}) runs {}", st.id, spec.url, protocol::to_string(*runtime));
  }
  if (!ask_kv) {
    st.live->report.store(std::move(report));
    return next();
  }
  start_probe(self, "/get_server_info",
              [self, report, next](const exchange_result& r, transport::collect_sink& sink) {
                auto info = r.status == exchange_status::ok && sink.status() / 100 == 2
                                ? nlohmann::json::parse(sink.body(), nullptr, false)
                                : nlohmann::json();
                if (info.is_object() && info.contains("kv_transfer_config") &&
                    info["kv_transfer_config"].is_object()) {
                  auto& kv = info["kv_transfer_config"];
                  report->connector =
                      protocol::parse_kv_connector(kv.value("kv_connector", std::string{}))
                          .value_or(protocol::kv_connector::unset);
                  report->kv_engine_id = kv.value("engine_id", std::string{});
                }
                self->state.live->report.store(report);
                next();
              });
}

void discover_models(self_ptr self) {
  auto& st = self->state;
  auto finish = [self](std::vector<std::string> models,
                       std::optional<protocol::engine_runtime> runtime) {
    auto& st = self->state;
    st.models = std::move(models);
    st.models_known = true;
    st.just_discovered = true;
    logs::proxy().info("worker {} ({}) serves {}", st.id, st.spec.spec.url,
                       nlohmann::json(st.models).dump());
    self->send(st.listener, models_atom_v, st.id, st.models);
    if (st.spec.spec.provider != protocol::provider_kind::none) {
      return check_health(self);
    }
    learn_report(self, runtime, [self] { check_health(self); });
  };
  // Anthropic pages its model list (20 by default): ask for the largest page.
  auto listing = st.spec.spec.provider == protocol::provider_kind::anthropic
                     ? std::string{"/v1/models?limit=1000"}
                     : std::string{"/v1/models"};
  start_probe(
      self, listing,
      [self, finish, path = listing](const exchange_result& r, transport::collect_sink& sink) {
        auto models = std::vector<std::string>{};
        std::optional<protocol::engine_runtime> runtime;
        if (r.status == exchange_status::ok && sink.status() / 100 == 2) {
          auto listing = nlohmann::json::parse(sink.body(), nullptr, false);
          models = protocol::models_from_listing(listing);
          runtime = runtime_in_listing(listing);
        }
        if (!models.empty()) {
          return finish(std::move(models), runtime);
        }
        auto listed = "GET " + path + ": " + describe(r, sink);
        if (self->state.spec.spec.provider != protocol::provider_kind::none) {
          return discovery_failed(self, listed);
        }
        start_probe(
            self, "/get_model_info",
            [self, finish, listed](const exchange_result& r2, transport::collect_sink& sink2) {
              auto models = std::vector<std::string>{};
              if (r2.status == exchange_status::ok && sink2.status() / 100 == 2) {
                models = protocol::models_from_listing(
                    nlohmann::json::parse(sink2.body(), nullptr, false));
              }
              if (models.empty()) {
                return discovery_failed(self,
                                        listed + ", GET /get_model_info: " + describe(r2, sink2));
              }
              finish(std::move(models), std::nullopt);
            });
      });
  (void)st;
}

void check_health(self_ptr self) {
  auto& st = self->state;
  st.check_running = true;
  if (!st.models_known) {
    return discover_models(self);
  }
  if (!st.reported && st.spec.spec.provider == protocol::provider_kind::none) {
    // Models given at registration: the listing is asked for what the worker says it runs.
    return start_probe(
        self, "/v1/models", [self](const exchange_result& r, transport::collect_sink& sink) {
          if (r.status != exchange_status::ok) {
            // Not up yet: a failed check; the next one asks again.
            return record_check(self, false, "model listing: " + describe(r, sink));
          }
          std::optional<protocol::engine_runtime> runtime;
          if (sink.status() / 100 == 2) {
            runtime = runtime_in_listing(nlohmann::json::parse(sink.body(), nullptr, false));
          }
          learn_report(self, runtime, [self] { check_health(self); });
        });
  }
  // External providers have no health endpoint: their model listing is the check.
  auto path = st.spec.spec.provider == protocol::provider_kind::none ? st.cfg.health_endpoint
                                                                     : std::string{"/v1/models"};
  start_probe(self, path, [self](const exchange_result& r, transport::collect_sink& sink) {
    auto& spec = self->state.spec.spec;
    auto status = sink.status();
    // A provider used with the clients' own keys (no key of its own) answers our keyless
    // probe 401/403: it is up; whether a client's key is good is that client's business.
    bool passthrough_denied = spec.provider != protocol::provider_kind::none &&
                              spec.api_key.empty() && (status == 401 || status == 403);
    record_check(self, r.status == exchange_status::ok && (status / 100 == 2 || passthrough_denied),
                 describe(r, sink));
  });
}

void schedule_half_open(self_ptr self) {
  auto& st = self->state;
  // Not a delayed_send: a removed worker's proxy must end as soon as nothing refers to it, and a
  // delayed message would hold it alive until it fires.
  send_later(self->system(), caf::actor_cast<worker_proxy_actor>(self), st.cfg.cb_timeout,
             breaker_atom_v, ++st.cb_generation);
}

/// Counts what the channel reported of a request's exchange: a failure (making `streak` failures
/// in a row) or an outcome while half-open.
void record_outcome(self_ptr self, const exchange_result& r, unsigned streak) {
  auto& st = self->state;
  auto state = st.live->breaker.load();
  if (is_worker_failure(r)) {
    st.cb_successes = 0;
    if (st.cfg.cb_enabled &&
        (state == breaker_state::half_open ||
         (state == breaker_state::closed && streak >= st.cfg.cb_failure_threshold))) {
      st.live->breaker.store(breaker_state::open);
      logs::proxy().warn("worker {} ({}): circuit breaker open after {} failures (last: {} {})",
                         st.id, st.spec.spec.url, streak, to_string(r.status), r.detail);
      schedule_half_open(self);
    }
    return;
  }
  if (state == breaker_state::half_open && ++st.cb_successes >= st.cfg.cb_success_threshold) {
    st.live->breaker.store(breaker_state::closed);
    st.cb_successes = 0;
    logs::proxy().info("worker {} ({}): circuit breaker closed", st.id, st.spec.spec.url);
  }
}

nlohmann::json inspect_state(self_ptr self) {
  auto& st = self->state;
  return {
      {"kind", "worker_proxy"},
      {"name", "worker_proxy:" + st.id},
      {"id", self->id()},
      {"worker_id", st.id},
      {"url", st.spec.spec.url},
      {"worker_type", to_string(st.spec.spec.type)},
      {"health", to_string(st.live->health.load())},
      {"circuit_breaker", to_string(st.live->breaker.load())},
      {"checks_passed", st.checks_passed}, // consecutive health checks
      {"checks_failed", st.checks_failed},
      {"cb_failures", st.channel->failure_streak()}, // consecutive failed requests
      {"in_flight", st.live->local_load()},
      {"requests_total", st.live->requests.load()},
      {"failures_total", st.live->failures.load()},
      {"pool_connections", st.pool->open_connections()},
      {"pool_idle", st.pool->idle_connections()},
      {"models", st.models},
      {"draining", st.draining},
      {"mailbox_size", self->mailbox().size()},
  };
}

/// After the last exchange in flight: a stopping proxy quits; a drained one lets go of its
/// connections and probes (it ends when unreachable).
void after_exchange(self_ptr self) {
  auto& st = self->state;
  if (st.live->local_load() != 0 || !(st.draining || st.stopping)) {
    return;
  }
  for (auto& [id, p] : st.probes) {
    p.exchange->cancel();
  }
  st.pool->close_idle();
  if (st.stopping) {
    self->quit();
  }
}

worker_proxy_actor::behavior_type worker_proxy(self_ptr self, std::string id,
                                               protocol::checked_spec spec,
                                               std::shared_ptr<transport::upstream_pool> pool,
                                               std::shared_ptr<pooled_channel> channel,
                                               std::shared_ptr<worker_live> live,
                                               worker_listener listener, worker_proxy_config cfg) {
  auto& st = self->state;
  st.id = std::move(id);
  st.pool = std::move(pool);
  st.channel = std::move(channel);
  st.spec = std::move(spec);
  st.live = std::move(live);
  st.listener = std::move(listener);
  st.cfg = cfg;
  if (st.spec.spec.model_id) {
    st.models = {*st.spec.spec.model_id};
    st.models_known = true;
  }
  self->send(self, health_atom_v);
  return {
      [self](outcome_atom, const exchange_result& r, unsigned streak) {
        record_outcome(self, r, streak);
      },
      [self](idle_atom) { after_exchange(self); },
      [self](done_atom, std::uint64_t order_id, transport::exchange_result& r) {
        auto& st = self->state;
        if (auto it = st.probes.find(order_id); it != st.probes.end()) {
          auto probe = std::move(it->second);
          st.probes.erase(it);
          if (st.draining) {
            return;
          }
          if (r.status == exchange_status::no_resources) {
            // The gateway could not open a connection (its own file descriptors or ports
            // ran out): no verdict on the worker; the next check asks again.
            st.check_running = false;
            if (!std::exchange(st.probe_starved, true)) {
              logs::proxy().warn("worker {} ({}): health check skipped, the gateway cannot "
                                 "open a connection ({}); its health stays {}",
                                 st.id, st.spec.spec.url, r.detail,
                                 to_string(st.live->health.load()));
            }
            return;
          }
          st.probe_starved = false;
          probe.then(r, *probe.sink);
        }
      },
      [self](health_atom) {
        auto& st = self->state;
        if (st.draining || st.stopping) {
          return;
        }
        if (!st.check_running) {
          check_health(self);
        }
        auto next = st.cfg.health_interval;
        if (st.cfg.health_jitter > 0) {
          next = delay_to_grid(self->clock().now().time_since_epoch(),
                               jittered(next, st.cfg.health_jitter, jitter_draw()));
        }
        if (!st.models_known) { // sooner, while discovery has not found a model yet
          next = std::min(next, st.discovery_retry);
          st.discovery_retry = std::min(st.discovery_retry * 2, st.cfg.health_interval);
        }
        send_later(self->system(), caf::actor_cast<worker_proxy_actor>(self), next, health_atom_v);
      },
      [self](breaker_atom, std::uint64_t generation) {
        auto& st = self->state;
        // An open breaker whose timeout passed lets requests probe the worker again.
        if (generation == st.cb_generation && st.live->breaker.load() == breaker_state::open) {
          st.live->breaker.store(breaker_state::half_open);
          st.cb_successes = 0;
          logs::proxy().info("worker {} ({}): circuit breaker half-open", st.id, st.spec.spec.url);
        }
      },
      [self](drain_atom) {
        auto& st = self->state;
        if (!st.draining) {
          logs::proxy().debug("worker {} ({}) removed: {} exchanges in flight finish", st.id,
                              st.spec.spec.url, st.live->local_load());
        }
        st.draining = true;
        st.channel->close();
        after_exchange(self);
      },
      [self](stop_atom) {
        auto& st = self->state;
        st.stopping = true;
        ++st.cb_generation; // a half-open timer still waiting finds nothing to do
        st.channel->close();
        after_exchange(self);
      },
      [self](inspect_atom, mailbox_atom) -> std::uint64_t { return self->mailbox().size(); },
      [self](inspect_atom) { return inspect_state(self).dump(); },
  };
}

} // namespace

std::string_view to_string(health_state s) noexcept {
  switch (s) {
  case health_state::unknown:
    return "unknown";
  case health_state::healthy:
    return "healthy";
  case health_state::unhealthy:
    return "unhealthy";
  }
  return "unknown";
}

std::string_view to_string(breaker_state s) noexcept {
  switch (s) {
  case breaker_state::closed:
    return "closed";
  case breaker_state::open:
    return "open";
  case breaker_state::half_open:
    return "half_open";
  }
  return "closed";
}

worker_link make_worker_proxy(caf::actor_system& sys, boost::asio::io_context& ioc, std::string id,
                              protocol::checked_spec spec, std::shared_ptr<worker_live> live,
                              worker_listener listener, worker_proxy_config cfg) {
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (spec.url.scheme == "https") {
    std::string why;
    tls = cfg.tls ? cfg.tls : transport::make_client_tls_context({}, why);
    if (!tls) {
      // Never fall back to plain text: a context trusting nothing fails every handshake.
      logs::proxy().error("worker {} ({}): {}", id, spec.spec.url, why);
      tls = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
      tls->set_verify_mode(boost::asio::ssl::verify_peer);
    }
  }
  auto pool = std::make_shared<transport::upstream_pool>(
      ioc, spec.url.host, spec.url.port, cfg.max_idle_connections, std::move(tls), cfg.use_strands);
  auto channel = std::make_shared<pooled_channel>(pool, spec.url.path, live);
  auto proxy = sys.spawn(worker_proxy, std::move(id), std::move(spec), std::move(pool), channel,
                         std::move(live), std::move(listener), std::move(cfg));
  channel->bind(proxy);
  return {std::move(proxy), std::move(channel)};
}

} // namespace troupe::actors
