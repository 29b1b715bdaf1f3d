#include "gateway/request_admission.hpp"

#include "actors/errors.hpp"
#include "services/logs.hpp"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/fmt/fmt.h>

namespace troupe::gateway {

namespace {

using clock = std::chrono::steady_clock;

/// Answers a request refused at the door in its route's format, and logs its line as a
/// request actor would (with `admission=` saying why).
void refuse(const actors::gateway_services& svc, actors::inbound_request& in,
            services::admission_verdict why) {
  using protocol::error_code;
  const auto& lim = svc.admission->limits();
  protocol::api_error err;
  if (why == services::admission_verdict::queue_full) {
    err = {error_code::too_many_requests,
           lim.rate_per_second > 0
               ? fmt::format("the gateway is at capacity (at most {} requests running and {:g} "
                             "admitted per second, {} waiting); retry later",
                             lim.max_active, lim.rate_per_second, lim.max_queued)
               : fmt::format("the gateway is at capacity ({} requests running, {} waiting); "
                             "retry later",
                             lim.max_active, lim.max_queued),
           {}};
  } else {
    err = {error_code::queue_timeout,
           fmt::format("no capacity freed up within the queue timeout of {:g} s; retry later",
                       std::chrono::duration<double>(lim.queue_timeout).count()),
           {}};
  }
  auto res = actors::make_error_response(err, protocol::info(in.op).format, in.request_id,
                                         in.req.version());
  if (why == services::admission_verdict::queue_full) {
    // The queue drains as requests end: a second is a fair first guess, and the OpenAI and
    // Anthropic SDKs honour it when they retry.
    res.set(transport::http::field::retry_after, "1");
  }
  in.reply->respond(std::move(res));
  svc.tracker->end(in.track);
  auto elapsed = std::chrono::duration<double, std::milli>(clock::now() - in.received);
  logs::http(in.request_id)
      .info("{} {} model=- worker=- status={} duration_ms={:.3f} error={} admission={}",
            in.req.method_string(), in.req.target(), protocol::http_status(err.code),
            elapsed.count(), protocol::to_string(err.code), to_string(why));
}

/// Hands an admitted request to its actor.
void start(const actors::services_ptr& svc, std::shared_ptr<actors::inbound_request> in,
           services::admission_permit permit) {
  svc->tracker->update(in->track, services::request_phase::parsing);
  in->permit = std::move(permit);
  actors::spawn_request(svc, std::move(in));
}

} // namespace

std::shared_ptr<services::admission_control> make_admission(boost::asio::io_context& ioc,
                                                            const actors::gateway_config& cfg) {
  if (cfg.max_concurrent_requests <= 0) {
    return nullptr;
  }
  services::admission_limits limits;
  limits.max_active = static_cast<std::size_t>(cfg.max_concurrent_requests);
  limits.max_queued = cfg.queue_size;
  // Waiting past the request's own deadline would only trade a 408 for a 504.
  limits.queue_timeout =
      std::min(cfg.queue_timeout,
               std::chrono::duration_cast<std::chrono::milliseconds>(cfg.request_timeout));
  limits.rate_per_second = cfg.rate_limit_per_second;
  // One timer for the whole queue (its alarm is the head's deadline, or its token's time). The
  // admission control owns the timer; the timer's handler holds it weakly. An alarm may replace
  // a pending one (an earlier token time), and alarms are asked for on any io thread: the timer
  // is set on a strand, in the order they were asked for (under the admission lock).
  auto timer = std::make_shared<boost::asio::steady_timer>(ioc);
  auto strand = boost::asio::make_strand(ioc);
  auto weak = std::make_shared<std::weak_ptr<services::admission_control>>();
  auto ctl = std::make_shared<services::admission_control>(limits, [timer, strand,
                                                                    weak](clock::time_point when) {
    boost::asio::post(strand, [timer, strand, weak = *weak, when] {
      timer->expires_at(when); // cancels a pending wait: its handler sees operation_aborted
      timer->async_wait(boost::asio::bind_executor(strand, [weak](boost::system::error_code ec) {
        if (auto ctl = weak.lock(); ctl && !ec) {
          ctl->wake();
        }
      }));
    });
  });
  *weak = ctl;
  return ctl;
}

void admit_request(const actors::services_ptr& svc, std::shared_ptr<actors::inbound_request> in) {
  auto& gate = svc->admission;
  if (!gate) {
    actors::spawn_request(svc, std::move(in));
    return;
  }
  // The tracker entry exists before the request can be let in from the queue (on another io
  // thread, by a request that ends there), so it is never added after its actor removed it.
  in->track = svc->tracker->begin(in->request_id, protocol::info(in->op).name);
  svc->tracker->update(in->track, services::request_phase::queued);
  // The queue holds the services weakly: a request still waiting at shutdown is dropped with
  // the services instead of keeping them alive in a cycle.
  std::weak_ptr<const actors::gateway_services> weak_svc = svc;
  auto e = gate->enter(
      [weak_svc, in](services::admission_verdict v, services::admission_permit permit) mutable {
        auto svc = weak_svc.lock();
        if (!svc) {
          return;
        }
        if (v != services::admission_verdict::admitted) {
          return refuse(*svc, *in, v);
        }
        if (svc->metrics) {
          svc->metrics->on_admission_wait(clock::now() - in->received);
        }
        start(svc, std::move(in), std::move(permit));
      });
  switch (e.verdict) {
  case services::admission_verdict::admitted:
    return start(svc, std::move(in), std::move(e.permit));
  case services::admission_verdict::queued:
    break;
  default:
    return refuse(*svc, *in, e.verdict);
  }
  // The front runs on the connection's strand, so this lands before a client's disconnect
  // can be seen, and before the request actor's own registration replaces it should the
  // request be let in on another thread meanwhile. Once it is let in, cancelling is a no-op.
  in->reply->on_disconnect([weak_gate = std::weak_ptr{gate}, ticket = e.ticket,
                            tracker = svc->tracker, track = in->track, id = in->request_id] {
    if (auto gate = weak_gate.lock(); gate && gate->cancel(ticket)) {
      tracker->end(track);
      logs::http(id).info("client left while queued for admission");
    }
  });
}

} // namespace troupe::gateway
