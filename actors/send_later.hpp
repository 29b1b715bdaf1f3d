#pragma once

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <chrono>

namespace troupe::actors {

/// Sends `msg...` to `target` after `delay`, unless `target` has ended by then.
///
/// Unlike `delayed_send`, the wait does not keep `target` alive: CAF's clock holds a strong
/// reference to whoever waits, so the wait is a small actor of its own that holds only a weak
/// one. It runs on the actor system's clock, so CAF's deterministic test scheduler drives it
/// like any delayed message (`advance`). Cancelling is up to the receiver: tag the message
/// (a generation number) or ignore it in the state it no longer applies to.
template <class Handle, class... Ts>
void send_later(caf::actor_system& sys, const Handle& target, std::chrono::milliseconds delay,
                Ts... msg) {
  auto weak = caf::actor_cast<caf::weak_actor_ptr>(target);
  // Hidden: a wait must not hold up the actor system's shutdown (it awaits every actor that
  // is not hidden); the clock drops what is still waiting when the system stops.
  sys.spawn<caf::hidden>([weak, delay, msg...](caf::event_based_actor* waiter) -> caf::behavior {
    return {
        caf::after(delay) >>
            [waiter, weak, msg...] {
              if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(weak)) {
                caf::anon_send(caf::actor_cast<Handle>(strong), msg...);
              }
              waiter->quit();
            },
    };
  });
}

} // namespace troupe::actors
