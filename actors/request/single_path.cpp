// One worker per attempt: the request goes to the worker its policy picked, its response is
// relayed as it arrives (relay_sink), and the attempt ends with the exchange. A retryable
// status is kept from the client while another attempt may follow, so that another worker can
// serve the request instead (docs/api.md, "Retries").

#include "actors/errors.hpp"
#include "actors/request/request_hints.hpp"
#include "actors/request/request_state.hpp"
#include "protocol/worker_error.hpp"

#include <array>

namespace troupe::actors {

namespace {

using transport::exchange_result;
using transport::exchange_status;

class single_path final : public request_path {
public:
  single_path(const gateway_services& svc, protocol::worker_type role)
      : picks_{{{role, svc.regular_policy, svc.regular_picker.get()}}} {}

  std::optional<protocol::api_error> prepare(request_self self) override {
    auto& st = self->state;
    st.prompt = request_prompt(st.in, st.in->req.body(), st.in->op, st.facts);
    return std::nullopt;
  }

  std::span<const pick_spec> picks() const override { return picks_; }

  protocol::worker_type stateful_role() const override { return picks_[0].role; }

  void start(request_self self, std::span<worker_entry_ptr> workers) override {
    auto& st = self->state;
    worker_ = std::move(workers.front());
    // Every attempt sends the client's body as it is kept in the request, not a copy.
    bool again = may_retry(st);
    auto body =
        transport::call_body::shared(std::shared_ptr<const std::string>(st.in, &st.in->req.body()));
    sink_ = make_relay_sink(self, st.in->reply, worker_->id);
    // A retryable status goes to another worker only for a request that makes model work (a
    // body), not one bound to the worker storing the Responses object it names.
    if (again && st.op->has_body && !st.pinned) {
      sink_->hold_retryable_errors();
    }
    dispatch_order order{next_order_id(), make_upstream_call(self, *worker_, std::move(body)),
                         sink_};
    exchange_.start(*worker_->channel, std::move(order), caf::actor_cast<caf::actor>(self));
  }

  void on_exchange_end(request_self self, std::uint64_t order, exchange_result& r) override {
    if (exchange_.ends(order)) {
      on_outcome(self, r);
    }
  }

  bool cancel(request_self) override { return exchange_.cancel(); }

  std::optional<unsigned> fail(request_self, const protocol::api_error& err,
                               bool worker_answer) override {
    if (!sink_) {
      return std::nullopt;
    }
    if (worker_answer) {
      sink_->release_held();
      return sink_->status();
    }
    sink_->fail(err);
    return protocol::http_status(err.code);
  }

  std::optional<unsigned> release_kept() override {
    if (!held_) {
      return std::nullopt;
    }
    sink_ = std::move(held_);
    sink_->release_held();
    return sink_->status();
  }

  void drop_kept() override { held_.reset(); }

private:
  void on_outcome(request_self self, const exchange_result& r) {
    auto& st = self->state;
    attempt_end end;
    end.status = r.http_status;
    end.ttft = r.first_byte;
    if (r.status == exchange_status::cancelled) {
      end.cancelled = true;
      end.status = sink_->started() ? r.http_status : 0;
    } else if (sink_->held()) {
      held_ = sink_; // the client's answer, should no other worker be left
      end.failure = protocol::worker_error(r.http_status, {}, "the worker");
      end.worker_answer = true;
      end.retry = retry_kind::after_backoff;
      end.failed_workers = {worker_->id};
    } else if (r.status != exchange_status::ok && !sink_->answered()) {
      // (The sink may have answered already: a worker's error body cut at its size limit.)
      end.failure = exchange_error(r, st.svc->cfg.request_timeout);
      end.detail = std::string(to_string(r.status)) + " " + r.detail;
      end.retry = !sink_->started() && untouched(r) ? retry_kind::at_once : retry_kind::none;
      end.failed_workers = {worker_->id};
    }
    attempt_done(self, std::move(end));
  }

  std::array<pick_spec, 1> picks_;
  worker_entry_ptr worker_;          ///< The current attempt's worker.
  awaited_exchange exchange_;        ///< Its exchange with the worker.
  std::shared_ptr<relay_sink> sink_; ///< Its response's way to the client.
  /// An earlier attempt's retryable answer, kept from the client: its answer if no other
  /// worker can be tried.
  std::shared_ptr<relay_sink> held_;
};

} // namespace

std::unique_ptr<request_path> make_single_path(const gateway_services& svc,
                                               protocol::worker_type role) {
  return std::make_unique<single_path>(svc, role);
}

} // namespace troupe::actors
