#pragma once

// The series `metrics` reads when it is scraped instead of counting them as they happen: from
// the fleet, the actor system, the HTTP server's counters and admission control. Each is always
// current, and a series whose source went (a removed worker) goes with it.

#include "services/metrics.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <prometheus/collectable.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <vector>

namespace troupe::services {

class admission_control;

namespace detail {

namespace prom = prometheus;

/// `troupe_worker_*` gauges, read from the fleet (the proxies' atomics) when scraped: always
/// current, and a removed worker's series disappear with it.
class worker_gauge_families final : public prom::Collectable {
public:
  std::vector<prom::MetricFamily> Collect() const override;

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
  std::vector<prom::MetricFamily> Collect() const override;

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

/// A collector of the series it reads, at scrape time, from one watched source (a server's
/// counters, admission control); it exports nothing until it is given one.
template <class Source> class watching : public prom::Collectable {
public:
  void watch(std::shared_ptr<const Source> source) {
    std::lock_guard guard{mx_};
    source_ = std::move(source);
  }

protected:
  std::shared_ptr<const Source> source() const {
    std::lock_guard guard{mx_};
    return source_;
  }

private:
  mutable std::mutex mx_;
  std::shared_ptr<const Source> source_;
};

/// The `troupe_client_*` flow-control series, read from the server's counters when scraped.
class client_flow_gauges final : public watching<transport::client_flow_stats> {
public:
  std::vector<prom::MetricFamily> Collect() const override;
};

/// The `troupe_io_busy_poll_*` series of the io threads' loops, read when scraped.
class io_loop_gauges final : public watching<transport::io_loop_stats> {
public:
  std::vector<prom::MetricFamily> Collect() const override;
};

/// The `troupe_http_connections*`, head-limit and TLS handshake series of the API port, read
/// from the server's counters when scraped.
class connection_gauges final : public watching<transport::connection_stats> {
public:
  std::vector<prom::MetricFamily> Collect() const override;
};

/// The `troupe_admission_*` series: counts read from admission control when scraped, and the
/// queue-wait histogram. Empty while admission control is off.
class admission_gauges final : public watching<admission_control> {
public:
  explicit admission_gauges(const prom::Histogram::BucketBoundaries& buckets) : wait_(buckets) {}

  std::vector<prom::MetricFamily> Collect() const override;

  void observe(double seconds) { wait_.Observe(seconds); }

private:
  prom::Histogram wait_;
};

} // namespace detail

} // namespace troupe::services
