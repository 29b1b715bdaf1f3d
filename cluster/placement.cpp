// Placement by owner (docs/cluster.md): the prompt's prefix group has one owner among the
// nodes that answer asks (rendezvous hashing of its rank seed, actors/policies/
// placement_owner.hpp); a pick the owner is to place is asked of it, and the owner's policy
// decides it with its view and loads and records it at once, so that a second node asking a
// millisecond later gets the same worker. This file carries the asks and answers between the
// policies and the members; what travels is block hashes and worker ids, never a prompt.

#include "actors/errors.hpp"
#include "cluster/node_state.hpp"
#include "services/logs.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace troupe::cluster {

namespace {

/// The members a policy may ask: linked, up, answering, with a view of this node's block size.
std::vector<std::string> current_owners(const node_state& st) {
  std::vector<std::string> out;
  for (auto& name : st.placement.answering) {
    auto bb = st.prefix.peer_block_bytes.find(name);
    auto m = st.members.members().find(name);
    if (st.links.count(name) && bb != st.prefix.peer_block_bytes.end() &&
        bb->second == st.cfg.prefix_block_bytes && m != st.members.members().end() &&
        m->second.state == member_state::up) {
      out.push_back(name);
    }
  }
  return out; // sorted: the set is
}

double ms_since(caf::actor_clock::time_point since, caf::actor_clock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - since).count();
}

void fail(node_state& st, placement_state::pending& p, std::string why) {
  ++st.placement.expired;
  if (st.deps.metrics) {
    st.deps.metrics->on_cluster_placement("expired");
  }
  p.promise.deliver(
      actors::make_caf_error(protocol::error_code::service_unavailable, std::move(why)));
}

} // namespace

bool answers_placement(const node_state& st) {
  return st.cfg.networked && !st.deps.prefix_policies.empty() && st.cfg.prefix_block_bytes > 0;
}

void placement_peer_hello(node_self self, const std::string& from,
                          const protocol::cluster_hello& h) {
  auto& st = self->state;
  if (h.placement) {
    st.placement.answering.insert(from);
  } else {
    st.placement.answering.erase(from); // an older node (or restarted as one)
  }
  update_placement_owners(self);
}

void update_placement_owners(node_self self) {
  auto& st = self->state;
  if (!answers_placement(st)) {
    return;
  }
  auto owners = current_owners(st);
  if (st.placement.told && owners == st.placement.owners) {
    return;
  }
  st.placement.owners = owners;
  st.placement.told = true;
  for (auto& [role, policy] : st.deps.prefix_policies) {
    self->send(policy, placement_atom_v,
               actors::placement_setup{caf::actor_cast<actors::placement_delegate>(self),
                                       actors::placement_owners{st.cfg.name, owners}});
  }
  // Asks on their way to a member that is no owner any more get no answer: fail them now.
  for (auto it = st.placement.asks.begin(); it != st.placement.asks.end();) {
    if (!std::binary_search(owners.begin(), owners.end(), it->second.member)) {
      fail(st, it->second, "member " + it->second.member + " owns no prefix group any more");
      it = st.placement.asks.erase(it);
    } else {
      ++it;
    }
  }
}

caf::result<protocol::placement_answer> delegate_placement(node_self self,
                                                           protocol::placement_ask& ask) {
  auto& st = self->state;
  auto& pl = st.placement;
  auto link = st.links.find(ask.owner);
  if (st.stopping || link == st.links.end() ||
      !std::binary_search(pl.owners.begin(), pl.owners.end(), ask.owner)) {
    ++pl.unreachable;
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_placement("unreachable");
    }
    return actors::make_caf_error(protocol::error_code::service_unavailable,
                                  "member " + ask.owner + " cannot be asked now");
  }
  ask.id = ++pl.next_id;
  auto rp = self->make_response_promise<protocol::placement_answer>();
  pl.asks.emplace(ask.id, placement_state::pending{rp, ask.owner, steady_now(self)});
  ++pl.delegated;
  if (st.deps.metrics) {
    st.deps.metrics->on_cluster_placement("delegated");
  }
  auto m = envelope(self);
  auto to = link->second;
  m.body = std::move(ask);
  send_to(self, to, m);
  return rp;
}

void on_placement_ask(node_self self, const std::string& from, protocol::placement_ask& ask) {
  auto& st = self->state;
  auto reply = [self, from](protocol::placement_answer a) {
    auto& st = self->state;
    auto link = st.links.find(from);
    if (st.stopping || link == st.links.end()) {
      return; // the asker decided by itself already
    }
    ++st.placement.answered;
    if (a.worker.empty()) {
      ++st.placement.undecided;
    }
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_placement("answered");
    }
    auto m = envelope(self);
    m.body = std::move(a);
    send_to(self, link->second, m);
  };
  const actors::policy_actor* policy = nullptr;
  for (auto& [role, p] : st.deps.prefix_policies) {
    if (role == ask.role) {
      policy = &p;
    }
  }
  if (!policy || ask.block_bytes != st.cfg.prefix_block_bytes) {
    return reply({ask.id, {}}); // no view of that role (or size) here: the asker decides
  }
  auto id = ask.id;
  self->request(*policy, std::chrono::seconds{1}, placement_atom_v, std::move(ask))
      .then([reply](protocol::placement_answer& a) { reply(std::move(a)); },
            [reply, id](caf::error&) {
              reply({id, {}});
            });
}

void on_placement_answer(node_self self, const std::string& from,
                         const protocol::placement_answer& a) {
  auto& st = self->state;
  auto& pl = st.placement;
  auto it = pl.asks.find(a.id);
  if (it == pl.asks.end() || it->second.member != from) {
    ++pl.late; // expired (the policy decided), or not ours
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_placement("late");
    }
    return;
  }
  auto rtt = ms_since(it->second.sent, steady_now(self));
  if (rtt > static_cast<double>(st.cfg.placement_timeout.count())) {
    ++pl.late; // the policy gave up waiting: it delivers nothing now
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_placement("late");
    }
  } else {
    ++pl.relayed;
  }
  pl.rtt_sum_ms += rtt;
  pl.rtt_max_ms = std::max(pl.rtt_max_ms, rtt);
  if (st.deps.metrics) {
    st.deps.metrics->on_cluster_placement_latency(std::chrono::duration<double, std::milli>(rtt));
  }
  it->second.promise.deliver(a);
  pl.asks.erase(it);
}

void expire_placements(node_self self) {
  auto& st = self->state;
  auto now = steady_now(self);
  for (auto it = st.placement.asks.begin(); it != st.placement.asks.end();) {
    if (now - it->second.sent > st.cfg.placement_timeout) {
      fail(st, it->second, "no answer from member " + it->second.member + " in time");
      it = st.placement.asks.erase(it);
    } else {
      ++it;
    }
  }
  update_placement_owners(self);
}

nlohmann::json placement_status(const node_state& st) {
  auto& pl = st.placement;
  return {{"answers", answers_placement(st)},
          {"timeout_ms", st.cfg.placement_timeout.count()},
          {"owners", pl.owners},
          {"answering", std::vector<std::string>(pl.answering.begin(), pl.answering.end())},
          {"pending", pl.asks.size()},
          {"delegated", pl.delegated},
          {"relayed", pl.relayed},
          {"late", pl.late},
          {"expired", pl.expired},
          {"unreachable", pl.unreachable},
          {"answered", pl.answered},
          {"undecided", pl.undecided},
          {"rtt_mean_ms", pl.relayed + pl.late > 0
                              ? pl.rtt_sum_ms / static_cast<double>(pl.relayed + pl.late)
                              : 0.0},
          {"rtt_max_ms", pl.rtt_max_ms}};
}

} // namespace troupe::cluster
