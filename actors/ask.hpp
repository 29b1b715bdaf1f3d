#pragma once

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

namespace troupe::actors {

/// Sends `xs...` to `dest` from a short-lived actor and calls `on_ok` or `on_error` with the
/// answer, on an actor thread. Lets asio-side code (endpoint handlers) ask an actor without
/// blocking a thread.
template <class Handle, class OnOk, class OnError, class... Ts>
void ask(caf::actor_system& sys, const Handle& dest, OnOk on_ok, OnError on_error, Ts... xs) {
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(dest, caf::infinite, xs...).then(on_ok, on_error);
  });
}

} // namespace troupe::actors
