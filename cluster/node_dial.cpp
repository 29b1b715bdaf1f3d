// How the cluster node links to its peers: it dials its seeds and the addresses members
// announce (dial_table.hpp says when, and which ones it gives up on). CAF 0.17 does not
// reconnect: a link that is lost is dialed again after a backoff.
//
// One connection per pair of nodes. CAF 0.17.6's OpenSSL module loses the link between two
// nodes as soon as a second connection between them opens (plain BASP closes the extra one and
// carries on; measured in docs/cluster.md): so of two nodes, the one whose cluster address
// sorts first dials, and the other waits for it. The other dials only if no link came for
// `passive_dial_after` (its peer may not know its address); a collision then costs one
// reconnect, after which the first node's dial wins.

#include "cluster/node_state.hpp"
#include "cluster/tls_diagnosis.hpp"
#include "services/logs.hpp"

#include <algorithm>

namespace troupe::cluster {

namespace {

/// What a failed TLS dial looks like from here: CAF does not pass OpenSSL's reason on.
std::string explain(const node_state& st, std::string error) {
  if (st.cfg.tls && error.find("disconnect_during_handshake") != std::string::npos) {
    error += " (the TLS handshake failed: the peer's certificate does not chain to "
             "--cluster-tls-ca, this node's does not chain to the peer's CA, or the peer does "
             "not speak TLS)";
  }
  return error;
}

/// Asks OpenSSL, on a thread of its own, why a TLS dial of `address` fails; logs the answer
/// and keeps it with the dial (`/admin/actors`).
void diagnose(node_self self, const std::string& address) {
  auto& st = self->state;
  auto* e = st.dials.find(address);
  if (!e) {
    return;
  }
  auto probe = make_tls_diagnosis(self->system(), st.cfg.tls_identity, st.cfg.connect_timeout);
  self->request(probe, 3 * st.cfg.connect_timeout, caf::connect_atom_v, e->where.host,
                e->where.port)
      .then(
          [self, address](std::string& reason) {
            logs::cluster().warn("TLS with {}: {}", address, reason);
            if (auto* e = self->state.dials.find(address)) {
              e->diagnosis = std::move(reason);
            }
          },
          [](caf::error&) {});
}

void dial_failed(node_self self, const std::string& address, std::string error) {
  auto& st = self->state;
  auto* e = st.dials.find(address);
  if (!e) {
    return;
  }
  auto first = e->failures == 0 || e->last_error != error;
  if (first) {
    logs::cluster().info("cannot link to {} ({}); retrying", address, error);
    if (st.cfg.tls && error.find("TLS handshake") != std::string::npos) {
      diagnose(self, address);
    }
  } else {
    logs::cluster().debug("cannot link to {} ({})", address, error);
  }
  if (st.dials.failed(address, std::move(error), steady_now(self))) {
    logs::cluster().warn("gave up on {}: {} dials failed in a row", address,
                         st.cfg.max_dial_failures);
  }
}

void try_dial(node_self self, const std::string& address) {
  auto& st = self->state;
  auto* e = st.dials.find(address);
  if (!e) {
    return;
  }
  auto dialer = st.deps.new_dialer ? st.deps.new_dialer() : st.deps.dialer;
  self->request(dialer, st.cfg.connect_timeout, caf::connect_atom_v, e->where.host, e->where.port)
      .then(
          [self, address](caf::node_id& nid, caf::strong_actor_ptr& ptr,
                          std::set<std::string>& ifs) {
            auto& st = self->state;
            if (st.stopping || !st.dials.find(address)) {
              return;
            }
            if (!ptr) {
              return dial_failed(self, address, "no actor published there");
            }
            if (nid == self->node()) {
              logs::cluster().info("{} is this node: not dialed again", address);
              return st.dials.mark_self(address);
            }
            if (ifs != st.peer_interface) {
              return dial_failed(self, address,
                                 "the actor published there is not a troupe cluster node");
            }
            auto peer = caf::actor_cast<peer_actor>(ptr);
            st.dials.succeeded(address);
            st.awaiting.erase(address);
            if (auto old = st.dial_links.find(address); old != st.dial_links.end()) {
              st.dialed.erase(old->second);
            }
            st.dialed[peer.address()] = address;
            st.dial_links[address] = peer.address();
            self->monitor(peer);
            logs::cluster().info("linked to {}", address);
            // Its name comes with its hello, which ours asks for (node_rejoin.cpp).
            greet(self, {}, peer, true);
            auto verified = std::any_of(st.links.begin(), st.links.end(),
                                        [&](auto& kv) { return kv.second == peer; });
            if (!verified) {
              await_hello(self, peer);
            }
          },
          [self, address, dialer](caf::error& e) {
            if (self->state.deps.new_dialer) {
              // Timed out: the dialer (and its middleman actor) goes, whatever it waits for.
              self->send_exit(dialer, caf::exit_reason::user_shutdown);
            }
            dial_failed(self, address, explain(self->state, self->system().render(e)));
          });
}

} // namespace

bool linked(const node_state& st, const std::string& address) {
  if (st.dial_links.count(address)) {
    return true;
  }
  for (auto& [name, link] : st.links) {
    auto it = st.members.members().find(name);
    if (it != st.members.members().end() && it->second.cluster_address == address &&
        it->second.state != member_state::down) {
      return true;
    }
  }
  return false;
}

void dial_all(node_self self) {
  auto& st = self->state;
  if (!st.cfg.networked || st.stopping) {
    return;
  }
  ask_unanswered(self);
  auto now = steady_now(self);
  auto skip = [&](const std::string& address) {
    if (linked(st, address)) {
      st.awaiting.erase(address);
      return true;
    }
    if (st.cfg.cluster_address < address) {
      return false; // this node dials this pair
    }
    auto [since, fresh] = st.awaiting.try_emplace(address, now);
    return now - since->second < st.cfg.passive_dial_after;
  };
  for (auto& address : st.dials.due(now, skip)) {
    try_dial(self, address);
  }
}

void address_lost(node_self self, const std::string& address) {
  auto& st = self->state;
  if (!address.empty() && st.dials.find(address)) {
    st.awaiting[address] = steady_now(self);
  }
}

void dial_lost(node_self self, const caf::actor_addr& peer) {
  auto& st = self->state;
  auto it = st.dialed.find(peer);
  if (it == st.dialed.end()) {
    return;
  }
  auto address = it->second;
  st.dialed.erase(it);
  if (auto l = st.dial_links.find(address); l != st.dial_links.end() && l->second == peer) {
    st.dial_links.erase(l);
  }
  st.dials.lost(address, steady_now(self));
  address_lost(self, address);
}

} // namespace troupe::cluster
