#include "services/metrics.hpp"

#include "services/admission.hpp"
#include "services/metric_children.hpp"
#include "services/process_gauges.hpp"
#include "services/scrape_gauges.hpp"

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

namespace prom = prometheus;
using detail::adder;
using detail::child_cache;
using detail::histogram_adder;

// -- the metric declarations --

struct metrics::impl {
  /// Latency buckets (seconds), as smg's defaults: 1 ms to 240 s.
  const prom::Histogram::BucketBoundaries latency_buckets{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
      2.5,   5,      10,    15,   30,    60,   120, 180,  240};
  /// Propagation buckets (seconds): a gossip round takes milliseconds, a partition seconds.
  const prom::Histogram::BucketBoundaries propagation_buckets{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 1, 2.5, 5, 10};

  std::shared_ptr<prom::Registry> registry = std::make_shared<prom::Registry>();
  std::shared_ptr<detail::worker_gauge_families> workers =
      std::make_shared<detail::worker_gauge_families>();
  std::shared_ptr<detail::system_gauges> system = std::make_shared<detail::system_gauges>();
  std::shared_ptr<detail::admission_gauges> admission =
      std::make_shared<detail::admission_gauges>(latency_buckets);
  std::shared_ptr<detail::client_flow_gauges> client_flow =
      std::make_shared<detail::client_flow_gauges>();
  std::shared_ptr<detail::connection_gauges> connections =
      std::make_shared<detail::connection_gauges>();
  std::shared_ptr<detail::io_loop_gauges> io_loops = std::make_shared<detail::io_loop_gauges>();
  std::shared_ptr<detail::process_gauges> process = std::make_shared<detail::process_gauges>();

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
  prom::Family<prom::Histogram>& cluster_load_age =
      prom::BuildHistogram()
          .Name("troupe_cluster_load_age_seconds")
          .Help("Age of a peer's load report (from its sending) when it took effect here")
          .Register(*registry);
  prom::Family<prom::Counter>& cluster_refused =
      prom::BuildCounter()
          .Name("troupe_cluster_refused_total")
          .Help("What the cluster layer refused from peers or strangers, by reason "
                "(docs/cluster.md, \"Securing a cluster\")")
          .Register(*registry);
  prom::Family<prom::Counter>& cluster_prefix_bytes =
      prom::BuildCounter()
          .Name("troupe_cluster_prefix_bytes_total")
          .Help("Bytes of shared prefix view updates sent to and received from members")
          .Register(*registry);
  prom::Family<prom::Counter>& cluster_prefix_hashes =
      prom::BuildCounter()
          .Name("troupe_cluster_prefix_hashes_total")
          .Help("Prefix block hashes of the shared prefix view, by outcome (sent, received, "
                "dropped over a tick's budget, unknown_worker)")
          .Register(*registry);
  prom::Family<prom::Gauge>& cluster_prefix_blocks =
      prom::BuildGauge()
          .Name("troupe_cluster_prefix_blocks")
          .Help("Prefix blocks the shared prefix view of a policy holds (all workers)")
          .Register(*registry);
  prom::Family<prom::Counter>& cluster_prefix_evicted =
      prom::BuildCounter()
          .Name("troupe_cluster_prefix_evicted_total")
          .Help("Prefix blocks the shared prefix view of a policy evicted at its limits")
          .Register(*registry);
  prom::Family<prom::Counter>& cluster_placement =
      prom::BuildCounter()
          .Name("troupe_cluster_placement_total")
          .Help("Placement asks between nodes by outcome (delegated, answered, unreachable, "
                "expired, late)")
          .Register(*registry);
  prom::Family<prom::Histogram>& cluster_placement_seconds =
      prom::BuildHistogram()
          .Name("troupe_cluster_placement_seconds")
          .Help("Time from a placement ask to the owner's answer")
          .Register(*registry);
  prom::Family<prom::Gauge>& response_affinity_ids =
      prom::BuildGauge()
          .Name("troupe_response_affinity_ids")
          .Help("Response ids whose worker this node knows (Responses affinity)")
          .Register(*registry);
  prom::Family<prom::Counter>& cluster_response_ids =
      prom::BuildCounter()
          .Name("troupe_cluster_response_ids_total")
          .Help("Response ids of the Responses affinity shared between nodes, by outcome (sent, "
                "received, unknown_worker, dropped)")
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
  child_cache<prom::Counter> prefix_bytes_by{{"direction"}, adder(cluster_prefix_bytes)};
  child_cache<prom::Counter> prefix_hashes_by{{"outcome"}, adder(cluster_prefix_hashes)};
  child_cache<prom::Gauge> prefix_blocks_by{{"policy"}, adder(cluster_prefix_blocks)};
  child_cache<prom::Counter> prefix_evicted_by{{"policy"}, adder(cluster_prefix_evicted)};
  child_cache<prom::Counter> response_ids_by{{"outcome"}, adder(cluster_response_ids)};
  prom::Gauge& response_ids_held = response_affinity_ids.Add({});
  prom::Counter& pd_requests_total = pd_requests.Add({});
  prom::Counter& retries_connect = retries.Add({{"reason", "connect"}});
  prom::Counter& retries_status = retries.Add({{"reason", "status"}});
  prom::Counter& pd_prefill_failures = pd_leg_failures.Add({{"leg", "prefill"}});
  prom::Counter& pd_decode_failures = pd_leg_failures.Add({{"leg", "decode"}});
  prom::Gauge& members_up = cluster_members.Add({{"state", "up"}});
  prom::Gauge& members_suspect = cluster_members.Add({{"state", "suspect"}});
  prom::Gauge& members_down = cluster_members.Add({{"state", "down"}});
  prom::Histogram& propagation = cluster_propagation.Add({}, propagation_buckets);
  prom::Histogram& load_age = cluster_load_age.Add({}, propagation_buckets);
  child_cache<prom::Counter> placement_by{{"outcome"}, adder(cluster_placement)};
  prom::Histogram& placement_rtt = cluster_placement_seconds.Add(
      {}, prom::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01,
                                            0.025, 0.05, 0.1});

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

void metrics::on_cluster_load_age(std::chrono::duration<double> age) {
  impl_->load_age.Observe(age.count());
}

void metrics::on_cluster_refused(std::string_view reason, std::uint64_t n) {
  impl_->cluster_refused_by.get({reason}).Increment(static_cast<double>(n));
}

void metrics::on_cluster_prefix_bytes(std::string_view direction, std::uint64_t bytes) {
  impl_->prefix_bytes_by.get({direction}).Increment(static_cast<double>(bytes));
}

void metrics::on_cluster_prefix_hashes(std::string_view outcome, std::uint64_t n) {
  impl_->prefix_hashes_by.get({outcome}).Increment(static_cast<double>(n));
}

void metrics::on_cluster_placement(std::string_view outcome) {
  impl_->placement_by.get({outcome}).Increment();
}

void metrics::on_cluster_placement_latency(std::chrono::duration<double> rtt) {
  impl_->placement_rtt.Observe(rtt.count());
}

void metrics::set_cluster_prefix_view(std::string_view policy, std::size_t blocks,
                                      std::uint64_t evicted) {
  impl_->prefix_blocks_by.get({policy}).Set(static_cast<double>(blocks));
  impl_->prefix_evicted_by.get({policy}).Increment(static_cast<double>(evicted));
}

void metrics::set_response_affinity_ids(std::size_t ids) {
  impl_->response_ids_held.Set(static_cast<double>(ids));
}

void metrics::on_cluster_response_ids(std::string_view outcome, std::uint64_t n) {
  impl_->response_ids_by.get({outcome}).Increment(static_cast<double>(n));
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

void metrics::watch_io_loops(std::shared_ptr<const transport::io_loop_stats> stats) {
  impl_->io_loops->watch(std::move(stats));
}

std::vector<std::shared_ptr<prometheus::Collectable>> metrics::collectables() const {
  return {impl_->registry,    impl_->workers,   impl_->system,   impl_->client_flow,
          impl_->connections, impl_->admission, impl_->io_loops, impl_->process};
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
