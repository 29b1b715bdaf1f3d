#include "actors/pd_leg.hpp"

#include "actors/caf_log_context.hpp"
#include "services/logs.hpp"

#include <caf/typed_event_based_actor.hpp>

namespace troupe::actors {

namespace {

using transport::exchange_result;
using transport::exchange_status;

struct pd_leg_state {
  static inline const char* name = "pd_leg";

  pd_leg_spec spec;
  awaited_exchange exchange;                            ///< The leg's exchange with its worker.
  caf::typed_response_promise<exchange_result> promise; ///< The parent's dispatch.
  bool cancelled = false;
};

using self_ptr = pd_leg_actor::stateful_pointer<pd_leg_state>;

void cancel_order(self_ptr self) {
  auto& st = self->state;
  st.cancelled = true;
  st.exchange.cancel();
}

pd_leg_actor::behavior_type pd_leg(self_ptr self, caf::actor_addr parent, pd_leg_spec spec) {
  self->state.spec = std::move(spec);
  self->monitor(parent);
  self->set_down_handler([self](caf::down_msg&) {
    // The request actor is gone: nobody waits for this leg any more.
    auto& st = self->state;
    logs::request(st.spec.request_id)
        .debug("{} leg: request actor gone, cancelling", protocol::to_string(st.spec.role));
    cancel_order(self);
    self->quit();
  });
  return {
      [self](dispatch_atom) -> caf::result<exchange_result> {
        auto& st = self->state;
        if (st.cancelled) {
          exchange_result r;
          r.status = exchange_status::cancelled;
          self->quit();
          return r;
        }
        st.promise = self->make_response_promise<exchange_result>();
        dispatch_order order{next_order_id(), std::move(st.spec.call), std::move(st.spec.sink)};
        st.exchange.start(*st.spec.worker->channel, std::move(order),
                          caf::actor_cast<caf::actor>(self));
        return st.promise;
      },
      [self](done_atom, std::uint64_t order, exchange_result& r) {
        auto& st = self->state;
        if (!st.exchange.ends(order)) {
          return;
        }
        st.promise.deliver(std::move(r));
        self->quit();
      },
      [self](cancel_atom) { cancel_order(self); },
  };
}

} // namespace

pd_leg_actor spawn_pd_leg(caf::local_actor* parent, pd_leg_spec spec) {
  auto leg = parent->spawn<caf::monitored>(pd_leg, parent->address(), std::move(spec));
  drop_caf_log_context();
  return leg;
}

} // namespace troupe::actors
