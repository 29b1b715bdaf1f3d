#include "services/metrics.hpp"

#include "services/admission.hpp"

#include <array>
#include <charconv>
#include <functional>
#include <mutex>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <shared_mutex>
#include <unordered_map>

namespace troupe::services {

namespace {

namespace prom = prometheus;

/// Label sets kept per family; further ones count under `other`.
constexpr std::size_t max_label_sets = 512;

/// Joins label values into one lookup key without allocating for the usual short ones.
class label_key {
public:
  explicit label_key(std::initializer_list<std::string_view> values) {
    std::size_t need = 0;
    for (auto v : values) {
      need += v.size() + 1;
    }
    char* out = need <= buf_.size() ? buf_.data() : (heap_.resize(need), heap_.data());
    std::size_t n = 0;
    for (auto v : values) {
      std::copy(v.begin(), v.end(), out + n);
      n += v.size();
      out[n++] = '\x1f'; // unit separator: not in any label value we produce
    }
    view_ = {out, n};
  }

  std::string_view view() const noexcept { return view_; }

private:
  std::array<char, 192> buf_;
  std::string heap_;
  std::string_view view_;
};

struct key_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

/// The children of one labelled family, created on first use and cached: the hot path looks a
/// child up under a shared lock instead of hashing a fresh label map in `Family::Add`.
template <class T> class child_cache {
public:
  using factory = std::function<T&(const prom::Labels&)>;

  child_cache(std::vector<std::string> names, factory make)
      : names_(std::move(names)), make_(std::move(make)) {}

  T& get(std::initializer_list<std::string_view> values) {
    label_key key{values};
    {
      std::shared_lock guard{mx_};
      if (auto it = children_.find(key.view()); it != children_.end()) {
        return *it->second;
      }
    }
    std::unique_lock guard{mx_};
    if (auto it = children_.find(key.view()); it != children_.end()) {
      return *it->second;
    }
    prom::Labels labels;
    bool full = children_.size() >= max_label_sets;
    auto v = values.begin();
    for (auto& name : names_) {
      labels.emplace(name, full ? std::string{"other"} : std::string(*v++));
    }
    if (full) {
      if (!overflow_) {
        overflow_ = &make_(labels);
      }
      return *overflow_;
    }
    T* child = &make_(labels);
    children_.emplace(std::string(key.view()), child);
    return *child;
  }

private:
  std::vector<std::string> names_;
  factory make_;
  std::shared_mutex mx_;
  std::unordered_map<std::string, T*, key_hash, std::equal_to<>> children_;
  T* overflow_ = nullptr;
};

/// `troupe_worker_*` gauges, read from the fleet (the proxies' atomics) when scraped: always
/// current, and a removed worker's series disappear with it.
class worker_gauge_families final : public prom::Collectable {
public:
  std::vector<prom::MetricFamily> Collect() const override {
    std::vector<prom::MetricFamily> out(3);
    out[0] = {"troupe_worker_requests_active",
              "Requests in flight at a worker, from this node",
              prom::MetricType::Gauge,
              {}};
    out[1] = {"troupe_worker_health",
              "Worker health: 1 healthy, 0 unhealthy or not checked yet",
              prom::MetricType::Gauge,
              {}};
    out[2] = {"troupe_worker_cb_state",
              "Worker circuit breaker: 0 closed, 1 open, 2 half-open",
              prom::MetricType::Gauge,
              {}};
    std::function<std::vector<worker_gauges>()> read;
    {
      std::lock_guard guard{mx_};
      read = read_;
    }
    if (!read) {
      return out;
    }
    for (auto& w : read()) {
      prom::ClientMetric m;
      m.label = {{"worker", std::move(w.url)}};
      m.gauge.value = w.requests_active;
      out[0].metric.push_back(m);
      m.gauge.value = w.healthy ? 1 : 0;
      out[1].metric.push_back(m);
      m.gauge.value = w.breaker;
      out[2].metric.push_back(std::move(m));
    }
    return out;
  }

  void watch(std::function<std::vector<worker_gauges>()> read) {
    std::lock_guard guard{mx_};
    read_ = std::move(read);
  }

private:
  mutable std::mutex mx_;
  std::function<std::vector<worker_gauges>()> read_;
};

/// `troupe_actors_running` and `troupe_requests_in_flight`, read when scraped.
class system_gauges final : public prom::Collectable {
public:
  std::vector<prom::MetricFamily> Collect() const override {
    std::vector<prom::MetricFamily> out;
    std::lock_guard guard{mx_};
    auto add = [&](const char* name, const char* help, const std::function<std::size_t()>& f) {
      if (f) {
        prom::ClientMetric m;
        m.gauge.value = static_cast<double>(f());
        out.push_back({name, help, prom::MetricType::Gauge, {std::move(m)}});
      }
    };
    add("troupe_actors_running",
        "Actors running in this node's actor system, request actors and PD legs included",
        running_);
    add("troupe_requests_in_flight", "Data-plane requests in flight on this node", in_flight_);
    return out;
  }

  void watch(std::function<std::size_t()> running, std::function<std::size_t()> in_flight) {
    std::lock_guard guard{mx_};
    running_ = std::move(running);
    in_flight_ = std::move(in_flight);
  }

private:
  mutable std::mutex mx_;
  std::function<std::size_t()> running_;
  std::function<std::size_t()> in_flight_;
};

/// The `troupe_client_*` flow-control series, read from the server's counters when scraped.
class client_flow_gauges final : public prom::Collectable {
public:
  std::vector<prom::MetricFamily> Collect() const override {
    std::shared_ptr<const transport::client_flow_stats> stats;
    {
      std::lock_guard guard{mx_};
      stats = stats_;
    }
    if (!stats) {
      return {};
    }
    auto one = [](prom::MetricType type, double value) {
      prom::ClientMetric m;
      (type == prom::MetricType::Counter ? m.counter.value : m.gauge.value) = value;
      return std::vector<prom::ClientMetric>{std::move(m)};
    };
    auto load = [](auto& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
    return {
        {"troupe_client_queued_bytes",
         "Response bytes waiting to be written to clients (each connection's share in whole "
         "64 KiB)",
         prom::MetricType::Gauge, one(prom::MetricType::Gauge, load(stats->queued_bytes))},
        {"troupe_client_streams_paused",
         "Streams whose worker is not read now because their client fell behind",
         prom::MetricType::Gauge, one(prom::MetricType::Gauge, load(stats->paused))},
        {"troupe_client_stream_pauses_total",
         "Times a stream's worker stopped being read because its client fell behind",
         prom::MetricType::Counter, one(prom::MetricType::Counter, load(stats->pauses))},
        {"troupe_client_write_timeouts_total",
         "Clients dropped because a write to them made no progress for --client-write-timeout-secs",
         prom::MetricType::Counter, one(prom::MetricType::Counter, load(stats->write_timeouts))},
    };
  }

  void watch(std::shared_ptr<const transport::client_flow_stats> stats) {
    std::lock_guard guard{mx_};
    stats_ = std::move(stats);
  }

private:
  mutable std::mutex mx_;
  std::shared_ptr<const transport::client_flow_stats> stats_;
};

/// The `troupe_http_connections*`, head-limit and TLS handshake series of the API port, read
/// from the server's counters when scraped.
class connection_gauges final : public prom::Collectable {
public:
  std::vector<prom::MetricFamily> Collect() const override {
    std::shared_ptr<const transport::connection_stats> stats;
    {
      std::lock_guard guard{mx_};
      stats = stats_;
    }
    if (!stats) {
      return {};
    }
    auto value = [](prom::MetricType type, double v, std::string label = {},
                    std::string label_value = {}) {
      prom::ClientMetric m;
      (type == prom::MetricType::Counter ? m.counter.value : m.gauge.value) = v;
      if (!label.empty()) {
        m.label.push_back({std::move(label), std::move(label_value)});
      }
      return m;
    };
    auto load = [](auto& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
    using type = prom::MetricType;
    return {
        {"troupe_http_connections",
         "Client connections open on the API port",
         type::Gauge,
         {value(type::Gauge, load(stats->open))}},
        {"troupe_http_connections_refused_total",
         "Client connections closed at once because --max-connections were open",
         type::Counter,
         {value(type::Counter, load(stats->refused))}},
        {"troupe_http_accept_errors_total",
         "Times the API port could not accept a connection for lack of resources (file "
         "descriptors, memory)",
         type::Counter,
         {value(type::Counter, load(stats->accept_errors))}},
        {"troupe_http_request_header_timeouts_total",
         "Request heads not complete within --request-header-timeout-secs (answered 408)",
         type::Counter,
         {value(type::Counter, load(stats->header_timeouts))}},
        {"troupe_http_header_refusals_total",
         "Request heads refused with 431, by reason: size (over the head size limit) or count "
         "(more fields than --max-request-headers)",
         type::Counter,
         {value(type::Counter, load(stats->header_too_large), "reason", "size"),
          value(type::Counter, load(stats->too_many_headers), "reason", "count")}},
        {"troupe_tls_handshake_failures_total",
         "TLS handshakes on the API port that failed or did not finish in time",
         type::Counter,
         {value(type::Counter, load(stats->tls_handshake_failures))}},
    };
  }

  void watch(std::shared_ptr<const transport::connection_stats> stats) {
    std::lock_guard guard{mx_};
    stats_ = std::move(stats);
  }

private:
  mutable std::mutex mx_;
  std::shared_ptr<const transport::connection_stats> stats_;
};

/// The `troupe_admission_*` series: counts read from admission control when scraped, and the
/// queue-wait histogram. Empty while admission control is off.
class admission_gauges final : public prom::Collectable {
public:
  explicit admission_gauges(const prom::Histogram::BucketBoundaries& buckets) : wait_(buckets) {}

  std::vector<prom::MetricFamily> Collect() const override {
    std::shared_ptr<const admission_control> ctl;
    {
      std::lock_guard guard{mx_};
      ctl = ctl_;
    }
    if (!ctl) {
      return {};
    }
    using type = prom::MetricType;
    auto s = ctl->stats();
    const auto& lim = ctl->limits();
    auto one = [](type t, double value, std::string label = {}, std::string label_value = {}) {
      prom::ClientMetric m;
      if (!label.empty()) {
        m.label = {{std::move(label), std::move(label_value)}};
      }
      (t == type::Counter ? m.counter.value : m.gauge.value) = value;
      return m;
    };
    auto n = [](auto v) { return static_cast<double>(v); };
    return {
        {"troupe_admission_active",
         "Data-plane requests holding an admission slot",
         type::Gauge,
         {one(type::Gauge, n(s.active))}},
        {"troupe_admission_queued",
         "Data-plane requests waiting for an admission slot",
         type::Gauge,
         {one(type::Gauge, n(s.queued))}},
        {"troupe_admission_limit",
         "Admission limits: slots (kind=concurrent), places to wait (kind=queue), admissions "
         "per second (kind=rate, 0: none)",
         type::Gauge,
         {one(type::Gauge, n(lim.max_active), "kind", "concurrent"),
          one(type::Gauge, n(lim.max_queued), "kind", "queue"),
          one(type::Gauge, lim.rate_per_second, "kind", "rate")}},
        {"troupe_admission_rate_tokens",
         "Rate-limit tokens in the bucket now (0 without --rate-limit-tokens-per-second)",
         type::Gauge,
         {one(type::Gauge, s.tokens)}},
        {"troupe_admission_admitted_total",
         "Requests admitted at once (path=immediate) or after waiting (path=queued)",
         type::Counter,
         {one(type::Counter, n(s.admitted), "path", "immediate"),
          one(type::Counter, n(s.admitted_queued), "path", "queued")}},
        {"troupe_admission_rejected_total",
         "Requests refused at the door: queue full (429) or waited too long (408)",
         type::Counter,
         {one(type::Counter, n(s.rejected_full), "reason", "queue_full"),
          one(type::Counter, n(s.rejected_timeout), "reason", "queue_timeout")}},
        {"troupe_admission_abandoned_total",
         "Queued requests whose client left before a slot freed",
         type::Counter,
         {one(type::Counter, n(s.abandoned))}},
        {"troupe_admission_queue_wait_seconds",
         "Time requests admitted from the queue waited for their slot",
         type::Histogram,
         {wait_.Collect()}},
    };
  }

  void watch(std::shared_ptr<const admission_control> ctl) {
    std::lock_guard guard{mx_};
    ctl_ = std::move(ctl);
  }

  void observe(double seconds) { wait_.Observe(seconds); }

private:
  mutable std::mutex mx_;
  std::shared_ptr<const admission_control> ctl_;
  prom::Histogram wait_;
};

template <class T> auto adder(prom::Family<T>& family) {
  return [&family](const prom::Labels& labels) -> T& { return family.Add(labels); };
}

auto histogram_adder(prom::Family<prom::Histogram>& family,
                     const prom::Histogram::BucketBoundaries& buckets) {
  return [&family, &buckets](const prom::Labels& labels) -> prom::Histogram& {
    return family.Add(labels, buckets);
  };
}

} // namespace

// -- the metric declarations --

struct metrics::impl {
  /// Latency buckets (seconds), as smg's defaults: 1 ms to 240 s.
  const prom::Histogram::BucketBoundaries latency_buckets{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
      2.5,   5,      10,    15,   30,    60,   120, 180,  240};
  /// Propagation buckets (seconds): a gossip round takes milliseconds, a partition seconds.
  const prom::Histogram::BucketBoundaries propagation_buckets{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  std::shared_ptr<prom::Registry> registry = std::make_shared<prom::Registry>();
  std::shared_ptr<worker_gauge_families> workers = std::make_shared<worker_gauge_families>();
  std::shared_ptr<system_gauges> system = std::make_shared<system_gauges>();
  std::shared_ptr<admission_gauges> admission = std::make_shared<admission_gauges>(latency_buckets);
  std::shared_ptr<client_flow_gauges> client_flow = std::make_shared<client_flow_gauges>();
  std::shared_ptr<connection_gauges> connections = std::make_shared<connection_gauges>();

  // HTTP
  prom::Family<prom::Counter>& http_requests =
      prom::BuildCounter()
          .Name("troupe_http_requests_total")
          .Help("HTTP responses of the API port, by method, route pattern and status")
          .Register(*registry);
  prom::Family<prom::Histogram>& http_duration =
      prom::BuildHistogram()
          .Name("troupe_http_request_duration_seconds")
          .Help("Time from receiving a request to the end of its response")
          .Register(*registry);

  // router
  prom::Family<prom::Counter>& router_requests =
      prom::BuildCounter()
          .Name("troupe_router_requests_total")
          .Help("Data-plane requests handled, by model, endpoint and requested streaming")
          .Register(*registry);
  prom::Family<prom::Counter>& router_errors =
      prom::BuildCounter()
          .Name("troupe_router_request_errors_total")
          .Help("Data-plane requests that failed, by error type (the client-facing error code, "
                "upstream_status for a worker's 5xx, client_closed)")
          .Register(*registry);
  prom::Family<prom::Histogram>& router_ttft =
      prom::BuildHistogram()
          .Name("troupe_router_ttft_seconds")
          .Help("Time from receiving a streamed request to the worker's first response byte")
          .Register(*registry);

  prom::Family<prom::Counter>& retries =
      prom::BuildCounter()
          .Name("troupe_router_retries_total")
          .Help("Requests sent to another worker after a failed attempt, by why it failed "
                "(reason=connect: no response; reason=status: a retryable status, after a backoff)")
          .Register(*registry);

  // prefill/decode
  prom::Family<prom::Counter>& pd_requests = prom::BuildCounter()
                                                 .Name("troupe_pd_requests_total")
                                                 .Help("Requests served by a prefill/decode pair")
                                                 .Register(*registry);
  prom::Family<prom::Counter>& pd_leg_failures =
      prom::BuildCounter()
          .Name("troupe_pd_leg_failures_total")
          .Help("Failed legs of prefill/decode requests, by leg")
          .Register(*registry);
  prom::Family<prom::Histogram>& pd_phase =
      prom::BuildHistogram()
          .Name("troupe_pd_phase_duration_seconds")
          .Help("Phases of prefill/decode requests that ended well, by the prefill worker's "
                "runtime (sglang: dual dispatch, vllm: in sequence) and phase (prefill: the "
                "prefill leg; decode_first_byte: the decode leg to its response head; decode: "
                "the decode leg)")
          .Register(*registry);
  prom::Family<prom::Counter>& pd_kv_transfer =
      prom::BuildCounter()
          .Name("troupe_pd_kv_transfer_total")
          .Help("KV handoffs of vLLM pairs, by connector and outcome (relayed: the prefill's "
                "kv_transfer_params; minted: Mooncake's, made by the gateway; missing: none, "
                "the decode computes the prompt; fanout: n > 1, no prefill leg)")
          .Register(*registry);

  // cluster
  prom::Family<prom::Gauge>& cluster_members =
      prom::BuildGauge()
          .Name("troupe_cluster_members")
          .Help("Cluster members this node knows (itself included), by state")
          .Register(*registry);
  prom::Family<prom::Histogram>& cluster_propagation =
      prom::BuildHistogram()
          .Name("troupe_cluster_propagation_seconds")
          .Help("Delay between a registry change on its origin node and its arrival here")
          .Register(*registry);
  prom::Family<prom::Counter>& cluster_refused =
      prom::BuildCounter()
          .Name("troupe_cluster_refused_total")
          .Help("What the cluster layer refused from peers or strangers, by reason "
                "(docs/cluster.md, \"Securing a cluster\")")
          .Register(*registry);

  // actors
  prom::Family<prom::Gauge>& mailbox =
      prom::BuildGauge()
          .Name("troupe_actor_mailbox_size")
          .Help("Messages waiting in a long-lived actor's mailbox at its last inspection")
          .Register(*registry);

  // -- cached children --

  child_cache<prom::Counter> http_requests_by{{"method", "path", "status_code"},
                                              adder(http_requests)};
  child_cache<prom::Histogram> http_duration_by{{"method", "path"},
                                                histogram_adder(http_duration, latency_buckets)};
  child_cache<prom::Counter> router_requests_by{{"model", "endpoint", "streaming"},
                                                adder(router_requests)};
  child_cache<prom::Counter> router_errors_by{{"error_type"}, adder(router_errors)};
  child_cache<prom::Histogram> router_ttft_by{{"model"},
                                              histogram_adder(router_ttft, latency_buckets)};
  child_cache<prom::Counter> cluster_refused_by{{"reason"}, adder(cluster_refused)};
  child_cache<prom::Histogram> pd_phase_by{{"runtime", "phase"},
                                           histogram_adder(pd_phase, latency_buckets)};
  child_cache<prom::Counter> pd_kv_transfer_by{{"connector", "outcome"}, adder(pd_kv_transfer)};
  prom::Counter& pd_requests_total = pd_requests.Add({});
  prom::Counter& retries_connect = retries.Add({{"reason", "connect"}});
  prom::Counter& retries_status = retries.Add({{"reason", "status"}});
  prom::Counter& pd_prefill_failures = pd_leg_failures.Add({{"leg", "prefill"}});
  prom::Counter& pd_decode_failures = pd_leg_failures.Add({{"leg", "decode"}});
  prom::Gauge& members_up = cluster_members.Add({{"state", "up"}});
  prom::Gauge& members_suspect = cluster_members.Add({{"state", "suspect"}});
  prom::Gauge& members_down = cluster_members.Add({{"state", "down"}});
  prom::Histogram& propagation = cluster_propagation.Add({}, propagation_buckets);

  std::mutex mailbox_mx;
  std::unordered_map<std::string, prom::Gauge*> mailbox_by_actor;
};

metrics::metrics() : impl_(std::make_unique<impl>()) {}

metrics::~metrics() = default;

void metrics::on_http_response(std::string_view method, std::string_view path, unsigned status,
                               std::chrono::steady_clock::duration elapsed) {
  char buf[8];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), status);
  std::string_view code{buf, ec == std::errc{} ? static_cast<std::size_t>(end - buf) : 0};
  impl_->http_requests_by.get({method, path, code}).Increment();
  impl_->http_duration_by.get({method, path})
      .Observe(std::chrono::duration<double>(elapsed).count());
}

void metrics::on_request_end(const request_outcome& r) {
  auto& d = *impl_;
  d.router_requests_by.get({r.model, r.endpoint, r.streaming ? "true" : "false"}).Increment();
  if (!r.error_type.empty()) {
    d.router_errors_by.get({r.error_type}).Increment();
  }
  if (r.ttft) {
    d.router_ttft_by.get({r.model}).Observe(std::chrono::duration<double>(*r.ttft).count());
  }
}

void metrics::on_pd_request() {
  impl_->pd_requests_total.Increment();
}

void metrics::on_retry(bool after_status) {
  (after_status ? impl_->retries_status : impl_->retries_connect).Increment();
}

void metrics::on_pd_leg_failure(protocol::worker_type leg) {
  (leg == protocol::worker_type::prefill ? impl_->pd_prefill_failures : impl_->pd_decode_failures)
      .Increment();
}

void metrics::on_pd_phase(std::string_view runtime, std::string_view phase,
                          std::chrono::steady_clock::duration took) {
  impl_->pd_phase_by.get({runtime, phase}).Observe(std::chrono::duration<double>(took).count());
}

void metrics::on_pd_kv_transfer(std::string_view connector, std::string_view outcome) {
  impl_->pd_kv_transfer_by.get({connector, outcome}).Increment();
}

void metrics::set_cluster_members(std::size_t up, std::size_t suspect, std::size_t down) {
  impl_->members_up.Set(static_cast<double>(up));
  impl_->members_suspect.Set(static_cast<double>(suspect));
  impl_->members_down.Set(static_cast<double>(down));
}

void metrics::on_cluster_propagation(std::chrono::duration<double> delay) {
  impl_->propagation.Observe(delay.count());
}

void metrics::on_cluster_refused(std::string_view reason, std::uint64_t n) {
  impl_->cluster_refused_by.get({reason}).Increment(static_cast<double>(n));
}

void metrics::set_mailbox_size(const std::string& actor, std::size_t size) {
  auto& d = *impl_;
  std::lock_guard guard{d.mailbox_mx};
  auto& g = d.mailbox_by_actor[actor];
  if (!g) {
    g = &d.mailbox.Add({{"actor", actor}});
  }
  g->Set(static_cast<double>(size));
}

void metrics::forget_actor(const std::string& actor) {
  auto& d = *impl_;
  std::lock_guard guard{d.mailbox_mx};
  if (auto it = d.mailbox_by_actor.find(actor); it != d.mailbox_by_actor.end()) {
    d.mailbox.Remove(it->second);
    d.mailbox_by_actor.erase(it);
  }
}

void metrics::watch_workers(std::function<std::vector<worker_gauges>()> read) {
  impl_->workers->watch(std::move(read));
}

void metrics::watch_system(std::function<std::size_t()> running_actors,
                           std::function<std::size_t()> requests_in_flight) {
  impl_->system->watch(std::move(running_actors), std::move(requests_in_flight));
}

void metrics::watch_client_flow(std::shared_ptr<const transport::client_flow_stats> stats) {
  impl_->client_flow->watch(std::move(stats));
}

void metrics::watch_connections(std::shared_ptr<const transport::connection_stats> stats) {
  impl_->connections->watch(std::move(stats));
}

std::vector<std::shared_ptr<prometheus::Collectable>> metrics::collectables() const {
  return {impl_->registry,    impl_->workers,     impl_->system,
          impl_->client_flow, impl_->connections, impl_->admission};
}

void metrics::watch_admission(std::shared_ptr<const admission_control> admission) {
  impl_->admission->watch(std::move(admission));
}

void metrics::on_admission_wait(std::chrono::steady_clock::duration waited) {
  impl_->admission->observe(std::chrono::duration<double>(waited).count());
}

std::string metrics::scrape() const {
  std::vector<prom::MetricFamily> families;
  for (auto& c : collectables()) {
    auto more = c->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  return prom::TextSerializer{}.Serialize(families);
}

} // namespace troupe::services
