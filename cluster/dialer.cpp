#include "cluster/dialer.hpp"

#include "cluster/tcp_probe.hpp"

#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/middleman_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <unistd.h>

namespace troupe::cluster {

namespace {

using dial_result = caf::result<caf::node_id, caf::strong_actor_ptr, std::set<std::string>>;

dialer_actor::behavior_type one_dial(dialer_actor::pointer self, dial_setup setup) {
  return {
      [self, setup](caf::connect_atom, std::string& host, std::uint16_t port) -> dial_result {
        std::string why;
        // Blocking, bounded: this actor has a thread of its own.
        int fd = connect_within(host, port, setup.tcp_timeout, why);
        if (fd < 0) {
          self->quit();
          return caf::make_error(caf::sec::cannot_connect_to_node, "no TCP connection to " + host +
                                                                       ":" + std::to_string(port) +
                                                                       ": " + why);
        }
        ::close(fd);
        auto& sys = self->system();
        auto mm = setup.tls ? caf::openssl::make_middleman_actor(sys, setup.basp)
                            : caf::io::make_middleman_actor(sys, setup.basp);
        // It goes when this dialer is done, or is killed (after its connect returns, if that
        // blocks).
        self->link_to(mm);
        auto rp = self->make_response_promise<caf::node_id, caf::strong_actor_ptr,
                                              std::set<std::string>>();
        self->request(mm, caf::infinite, caf::connect_atom_v, std::move(host), port)
            .then(
                [self, rp, mm](caf::node_id& nid, caf::strong_actor_ptr& ptr,
                               std::set<std::string>& ifs) mutable {
                  rp.deliver(std::move(nid), std::move(ptr), std::move(ifs));
                  self->send_exit(mm, caf::exit_reason::user_shutdown);
                  self->quit();
                },
                [self, rp, mm](caf::error& e) mutable {
                  rp.deliver(std::move(e));
                  self->send_exit(mm, caf::exit_reason::user_shutdown);
                  self->quit();
                });
        return rp;
      },
  };
}

} // namespace

dialer_actor make_one_dial(caf::actor_system& sys, const dial_setup& setup) {
  return sys.spawn<caf::detached + caf::hidden>(one_dial, setup);
}

} // namespace troupe::cluster
