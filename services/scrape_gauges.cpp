#include "services/scrape_gauges.hpp"

#include "services/admission.hpp"

#include <prometheus/client_metric.h>

namespace troupe::services::detail {

namespace {

/// One sample of a counter or gauge, with an optional label.
prom::ClientMetric sample(prom::MetricType type, double value, std::string label = {},
                          std::string label_value = {}) {
  prom::ClientMetric m;
  (type == prom::MetricType::Counter ? m.counter.value : m.gauge.value) = value;
  if (!label.empty()) {
    m.label.push_back({std::move(label), std::move(label_value)});
  }
  return m;
}

/// A counter's current value (relaxed: a scrape needs no ordering).
template <class Atomic> double load(const Atomic& a) {
  return static_cast<double>(a.load(std::memory_order_relaxed));
}

} // namespace

std::vector<prom::MetricFamily> worker_gauge_families::Collect() const {
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

std::vector<prom::MetricFamily> system_gauges::Collect() const {
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
      "Actors running in this node's actor system, request actors and PD legs included", running_);
  add("troupe_requests_in_flight", "Data-plane requests in flight on this node", in_flight_);
  return out;
}

std::vector<prom::MetricFamily> client_flow_gauges::Collect() const {
  auto stats = source();
  if (!stats) {
    return {};
  }
  return {
      {"troupe_client_queued_bytes",
       "Response bytes waiting to be written to clients (each connection's share in whole "
       "64 KiB)",
       prom::MetricType::Gauge,
       {sample(prom::MetricType::Gauge, load(stats->queued_bytes))}},
      {"troupe_client_streams_paused",
       "Streams whose worker is not read now because their client fell behind",
       prom::MetricType::Gauge,
       {sample(prom::MetricType::Gauge, load(stats->paused))}},
      {"troupe_client_stream_pauses_total",
       "Times a stream's worker stopped being read because its client fell behind",
       prom::MetricType::Counter,
       {sample(prom::MetricType::Counter, load(stats->pauses))}},
      {"troupe_client_write_timeouts_total",
       "Clients dropped because a write to them made no progress for --client-write-timeout-secs",
       prom::MetricType::Counter,
       {sample(prom::MetricType::Counter, load(stats->write_timeouts))}},
  };
}

std::vector<prom::MetricFamily> connection_gauges::Collect() const {
  auto stats = source();
  if (!stats) {
    return {};
  }
  using type = prom::MetricType;
  return {
      {"troupe_http_connections",
       "Client connections open on the API port",
       type::Gauge,
       {sample(type::Gauge, load(stats->open))}},
      {"troupe_http_connections_refused_total",
       "Client connections closed at once because --max-connections were open",
       type::Counter,
       {sample(type::Counter, load(stats->refused))}},
      {"troupe_http_accept_errors_total",
       "Times the API port could not accept a connection for lack of resources (file "
       "descriptors, memory)",
       type::Counter,
       {sample(type::Counter, load(stats->accept_errors))}},
      {"troupe_http_request_header_timeouts_total",
       "Request heads not complete within --request-header-timeout-secs (answered 408)",
       type::Counter,
       {sample(type::Counter, load(stats->header_timeouts))}},
      {"troupe_http_header_refusals_total",
       "Request heads refused with 431, by reason: size (over --max-request-header-bytes) or "
       "count "
       "(more fields than --max-request-headers)",
       type::Counter,
       {sample(type::Counter, load(stats->header_too_large), "reason", "size"),
        sample(type::Counter, load(stats->too_many_headers), "reason", "count")}},
      {"troupe_tls_handshake_failures_total",
       "TLS handshakes on the API port that failed or did not finish in time",
       type::Counter,
       {sample(type::Counter, load(stats->tls_handshake_failures))}},
  };
}

std::vector<prom::MetricFamily> admission_gauges::Collect() const {
  auto ctl = source();
  if (!ctl) {
    return {};
  }
  using type = prom::MetricType;
  auto s = ctl->stats();
  const auto& lim = ctl->limits();
  auto n = [](auto v) { return static_cast<double>(v); };
  return {
      {"troupe_admission_active",
       "Data-plane requests holding an admission slot",
       type::Gauge,
       {sample(type::Gauge, n(s.active))}},
      {"troupe_admission_queued",
       "Data-plane requests waiting for an admission slot",
       type::Gauge,
       {sample(type::Gauge, n(s.queued))}},
      {"troupe_admission_limit",
       "Admission limits: slots (kind=concurrent), places to wait (kind=queue), admissions "
       "per second (kind=rate, 0: none)",
       type::Gauge,
       {sample(type::Gauge, n(lim.max_active), "kind", "concurrent"),
        sample(type::Gauge, n(lim.max_queued), "kind", "queue"),
        sample(type::Gauge, lim.rate_per_second, "kind", "rate")}},
      {"troupe_admission_rate_tokens",
       "Rate-limit tokens in the bucket now (0 without --rate-limit-tokens-per-second)",
       type::Gauge,
       {sample(type::Gauge, s.tokens)}},
      {"troupe_admission_admitted_total",
       "Requests admitted at once (path=immediate) or after waiting (path=queued)",
       type::Counter,
       {sample(type::Counter, n(s.admitted), "path", "immediate"),
        sample(type::Counter, n(s.admitted_queued), "path", "queued")}},
      {"troupe_admission_rejected_total",
       "Requests refused at the door: queue full (429) or waited too long (408)",
       type::Counter,
       {sample(type::Counter, n(s.rejected_full), "reason", "queue_full"),
        sample(type::Counter, n(s.rejected_timeout), "reason", "queue_timeout")}},
      {"troupe_admission_abandoned_total",
       "Queued requests whose client left before a slot freed",
       type::Counter,
       {sample(type::Counter, n(s.abandoned))}},
      {"troupe_admission_queue_wait_seconds",
       "Time requests admitted from the queue waited for their slot",
       type::Histogram,
       {wait_.Collect()}},
  };
}

std::vector<prom::MetricFamily> io_loop_gauges::Collect() const {
  auto stats = source();
  if (!stats) {
    return {};
  }
  using type = prom::MetricType;
  return {
      {"troupe_io_busy_poll_spins_total",
       "Times an io thread ran out of work and polled for up to --busy-poll-us before sleeping",
       type::Counter,
       {sample(type::Counter, load(stats->spins))}},
      {"troupe_io_busy_poll_hits_total",
       "Polls that found work before the budget ran out (a sleep and a wake-up saved)",
       type::Counter,
       {sample(type::Counter, load(stats->hits))}},
      {"troupe_io_busy_poll_vetoes_total",
       "Times an io thread slept at once instead of polling because other threads waited for "
       "a CPU",
       type::Counter,
       {sample(type::Counter, load(stats->vetoes))}},
      {"troupe_io_busy_poll_window_seconds",
       "How long an io thread polls before it sleeps now, adapted below --busy-poll-us to the "
       "idle spells it waits through",
       type::Gauge,
       {sample(type::Gauge, load(stats->window_us) / 1e6)}},
      {"troupe_io_busy_poll_window_changes_total",
       "Times an io thread's poll window grew or shrank",
       type::Counter,
       {sample(type::Counter, load(stats->window_changes))}},
      {"troupe_io_busy_poll_seconds_total",
       "CPU time io threads spent polling without work",
       type::Counter,
       {sample(type::Counter, load(stats->spin_ns) / 1e9)}},
      {"troupe_io_sends_deferred_total",
       "Writes that waited for the end of their io loop pass, to go out with its other sends "
       "(--send-batch)",
       type::Counter,
       {sample(type::Counter, load(stats->sends_deferred))}},
      {"troupe_io_send_flushes_total",
       "Times an io loop sent the writes its pass deferred (deferred / flushes: the mean burst)",
       type::Counter,
       {sample(type::Counter, load(stats->send_flushes))}},
  };
}

} // namespace troupe::services::detail
