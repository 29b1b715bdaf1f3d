// What the cluster node does with what peers send, and who counts as a member: an actor that
// said hello over its link (this node dialed it, or it dialed this node). Anything else an
// actor sends before its hello is refused and counted, as is a hello that claims the address
// of another member. With TLS only holders of a certificate from the cluster CA can link at
// all; without TLS anyone who reaches the port can (docs/cluster.md, "Securing a cluster").

#include "cluster/cpu_meter.hpp"
#include "cluster/node_state.hpp"
#include "cluster/version_guard.hpp"
#include "services/logs.hpp"

#include <algorithm>

namespace troupe::cluster {

namespace {

void refuse(node_self self, refusal r, const std::string& what) {
  auto& counts = *self->state.deps.refusals;
  counts.add(r);
  auto n = counts.get(r);
  if (n <= 5 || n % 1000 == 0) {
    logs::cluster().warn("refused {} ({}, {} so far)", what, to_string(r), n);
  }
}

void learn(node_self self, const std::string& address) {
  auto& st = self->state;
  std::string why;
  switch (st.dials.learn(address, st.cfg.cluster_address, why)) {
  case dial_table::learned::added:
    logs::cluster().debug("learned member address {}", address);
    break;
  case dial_table::learned::invalid:
  case dial_table::learned::full:
    logs::cluster().warn("not dialing {}: {}", address, why);
    break;
  case dial_table::learned::known:
    break;
  }
}

/// `sender` is member `name` from now on.
void admit(node_self self, const std::string& name, const peer_actor& sender) {
  auto& st = self->state;
  auto& link = st.links[name];
  if (link == sender) {
    return;
  }
  if (link) {
    // An older link of a member that restarted, or linked twice.
    st.greeted.erase(link.address());
  }
  link = sender;
  link_verified(self, name, sender);
  self->monitor(sender);
  greet(self, name, sender);
  snapshot_due(self, name); // a new verified link: the member is told the recent past
}

void on_hello(node_self self, const std::string& from, const protocol::cluster_hello& h) {
  auto& st = self->state;
  if (auto* m = st.members.find(from)) {
    m->acks = h.acks;
    m->deltas = h.deltas;
    m->api_address = h.api_address;
    if (!h.cluster_address.empty()) {
      m->cluster_address = h.cluster_address;
    }
  }
  prefix_peer_hello(self, from, h);
  response_peer_hello(self, from, h);
  placement_peer_hello(self, from, h);
  learn(self, h.cluster_address);
  for (auto& p : h.peers) {
    learn(self, p);
  }
}

void on_sync(node_self self, const std::string& from, protocol::registry_sync& s) {
  auto& st = self->state;
  for (auto& line : version_guard{st.cfg.max_version_ahead}.remove_ahead(s.records, wall_ms())) {
    refuse(self, refusal::future_version, "a record from " + from + ": " + line);
  }
  if (s.full) {
    if (!st.syncs.accept(from, s.sync_id, steady_now(self))) {
      return refuse(self, refusal::sync_rate, "a whole-registry sync from " + from);
    }
    ++st.full_syncs_received;
  } else if (st.deps.metrics) {
    // A write on its origin node to its arrival here (wall clocks: assumes synchronized ones).
    auto now = wall_ms();
    for (auto& r : s.records) {
      if (r.stamp_ms > 0) {
        auto delay = std::max<std::int64_t>(0, now - r.stamp_ms);
        st.deps.metrics->on_cluster_propagation(std::chrono::duration<double>(delay / 1000.0));
      }
    }
  }
  st.records_received += s.records.size();
  if (s.records.empty()) {
    return;
  }
  // What `from` wrote itself is confirmed to it once merged (relayed records are not: their
  // writer heard from its own peers).
  protocol::cluster_ack ack;
  if (!s.full) {
    for (auto& r : s.records) {
      if (r.origin == from) {
        ack.records.emplace_back(r.id, r.version);
      }
    }
  }
  self->request(st.deps.registry, caf::infinite, merge_atom_v,
                actors::record_batch(std::move(s.records)))
      .then(
          [self, from, ack = std::move(ack)](actors::record_batch& taken) mutable {
            auto& st = self->state;
            cpu_meter busy{st.cpu_ns};
            if (st.stopping) {
              return;
            }
            // Records new here go on to the members that may lack them (not the sender, nor
            // their writer): nodes that are not linked directly converge at once, and a write
            // whose writer died right after a peer confirmed it reaches everyone.
            if (!taken.empty()) {
              std::set<std::string> except{from};
              for (auto& r : taken) {
                except.insert(r.origin);
              }
              if (except.size() > 2) {
                // Writers differ (a whole registry): only the sender is left out.
                except = {from};
              }
              ++st.relays;
              broadcast_records(self, std::move(taken), except);
            }
            auto link = st.links.find(from);
            auto* m = st.members.find(from);
            if (!ack.records.empty() && link != st.links.end() && m && m->acks) {
              auto msg = envelope(self);
              msg.body = std::move(ack);
              send_to(self, link->second, msg);
            }
          },
          [](caf::error&) {});
}

void on_load(node_self self, const std::string& from, std::int64_t sent_ms,
             const protocol::load_report& r) {
  auto& st = self->state;
  if (st.members.report(from, r)) {
    apply_remote_loads(self);
    // How old the news is when it steers policies here (wall clocks: assumes synchronized
    // ones); the sender's coalescing (up to one gossip interval) comes before.
    if (st.deps.metrics && sent_ms > 0) {
      auto age = std::max<std::int64_t>(0, wall_ms() - sent_ms);
      st.deps.metrics->on_cluster_load_age(std::chrono::duration<double>(age / 1000.0));
    }
  }
  snapshot_on_load(self, from, r.registry_digest);
  if (std::find(r.resend.begin(), r.resend.end(), st.cfg.name) != r.resend.end()) {
    st.whole_load_due.insert(from); // it missed a delta of ours
  }
  // Anti-entropy: registries that still differ after two reports exchange their whole state
  // (a delta lost to a link that dropped, a node that was away).
  auto& n = st.digest_mismatches[from];
  if (!st.fleet || r.registry_digest == st.fleet->digest) {
    n = 0;
    return;
  }
  if (++n >= 2) {
    n = 0;
    logs::cluster().debug("registry of {} differs from ours: sending ours", from);
    request_full_sync(self, from);
  }
}

/// True when a member other than the one called `name` is up at `address`.
bool address_taken(const node_state& st, const std::string& address, const std::string& name) {
  for (auto& [other, m] : st.members.members()) {
    if (other != name && m.cluster_address == address && m.state != member_state::down &&
        st.links.count(other)) {
      return true;
    }
  }
  return false;
}

/// True when `hello` comes from a second live node with the name of a member: another
/// incarnation, on another link, while the member is up (a member that restarted went down, or
/// at least silent, before its new incarnation linked).
bool is_duplicate(const node_state& st, const protocol::cluster_message& hello) {
  auto link = st.links.find(hello.from);
  auto it = st.members.members().find(hello.from);
  return link != st.links.end() && it != st.members.members().end() &&
         it->second.state == member_state::up && it->second.incarnation != 0 &&
         hello.incarnation != 0 && hello.incarnation != it->second.incarnation;
}

void refuse_duplicate(node_self self, const peer_actor& sender, protocol::cluster_message hello) {
  auto& st = self->state;
  auto& h = std::get<protocol::cluster_hello>(hello.body);
  auto* m = st.members.find(hello.from);
  auto member_address = m ? m->cluster_address : std::string{};
  auto& d = st.duplicates[hello.from];
  if (d.actor != sender) {
    if (d.actor) {
      self->demonitor(d.actor.address());
    }
    logs::cluster().error("two nodes call themselves {}: the member at {} and another at {}; "
                          "refusing the second while the first is up. Give each node its own "
                          "--node-name",
                          hello.from, member_address.empty() ? "(unknown)" : member_address,
                          h.cluster_address.empty() ? "(unknown)" : h.cluster_address);
    d.actor = sender;
    d.since = std::chrono::system_clock::now();
    self->monitor(sender);
  }
  d.member_address = member_address;
  d.hello = std::move(hello);
  refuse(self, refusal::duplicate_name, "a hello from a second node called " + d.hello.from);
  publish_status(self);
}

/// A message of member `sender`.
void deliver(node_self self, protocol::cluster_message& msg, std::size_t bytes) {
  auto& st = self->state;
  if (std::holds_alternative<protocol::cluster_bye>(msg.body)) {
    return member_down(self, msg.from, "left the cluster");
  }
  auto heard = st.members.heard(msg.from, msg.incarnation, steady_now(self),
                                std::chrono::system_clock::now());
  if (heard == member_table::heard_result::joined) {
    logs::cluster().info("member {} is up", msg.from);
  } else if (heard == member_table::heard_result::restarted) {
    logs::cluster().info("member {} restarted", msg.from);
  } else if (heard == member_table::heard_result::recovered) {
    logs::cluster().info("member {} is up again", msg.from);
  }
  bool status_changed = heard != member_table::heard_result::known;
  std::visit(
      [&](auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, protocol::cluster_hello>) {
          on_hello(self, msg.from, body);
          status_changed = true;
        } else if constexpr (std::is_same_v<T, protocol::registry_sync>) {
          on_sync(self, msg.from, body);
        } else if constexpr (std::is_same_v<T, protocol::load_report>) {
          on_load(self, msg.from, msg.sent_ms, body);
          status_changed = true;
        } else if constexpr (std::is_same_v<T, protocol::cluster_ack>) {
          on_ack(self, msg.from, body);
        } else if constexpr (std::is_same_v<T, protocol::prefix_update>) {
          on_prefix_update(self, msg.from, body, bytes);
        } else if constexpr (std::is_same_v<T, protocol::response_update>) {
          on_response_update(self, msg.from, body);
        } else if constexpr (std::is_same_v<T, protocol::placement_ask>) {
          on_placement_ask(self, msg.from, body);
        } else if constexpr (std::is_same_v<T, protocol::placement_answer>) {
          on_placement_answer(self, msg.from, body);
        }
      },
      msg.body);
  if (heard != member_table::heard_result::known) {
    apply_remote_loads(self);
  }
  if (status_changed) {
    publish_status(self);
  }
}

} // namespace

void on_gossip(node_self self, const peer_actor& sender, std::string& bytes) {
  auto& st = self->state;
  if (st.stopping) {
    return;
  }
  ++st.messages_in;
  st.bytes_in += bytes.size();
  std::string why;
  auto msg = protocol::decode_message(bytes, why);
  if (!msg) {
    st.last_decode_error = why;
    return refuse(self, refusal::malformed, "a message this node cannot read: " + why);
  }
  if (msg->from == st.cfg.name) {
    auto* h = std::get_if<protocol::cluster_hello>(&msg->body);
    auto [it, fresh] = st.own_name_clashes.try_emplace(sender.address());
    if (fresh) {
      it->second.second = std::chrono::system_clock::now();
      self->monitor(sender);
      greet(self, {}, sender); // our hello (nothing else): the other node sees the clash too
    }
    if (h && !h->cluster_address.empty() && it->second.first != h->cluster_address) {
      it->second.first = h->cluster_address;
      logs::cluster().error("the node at {} calls itself {}, as this node does: refused; give "
                            "each node its own --node-name",
                            h->cluster_address, msg->from);
      publish_status(self);
    }
    return refuse(self, refusal::name_clash, "a message from a peer named like this node");
  }
  if (auto d = st.duplicates.find(msg->from);
      d != st.duplicates.end() && d->second.actor == sender) {
    return refuse(self, refusal::duplicate_name,
                  "a message from the second node called " + msg->from);
  }
  auto link = st.links.find(msg->from);
  auto* hello = std::get_if<protocol::cluster_hello>(&msg->body);
  // A hello asking for ours on the member's verified link: it lacks our greeting (node_rejoin).
  bool asks_again = false;
  if (link == st.links.end() || link->second != sender) {
    auto* h = hello;
    if (std::holds_alternative<protocol::cluster_bye>(msg->body)) {
      return; // a goodbye of a link that is not the member's current one: nothing to drop
    }
    if (!h) {
      ask_lost_member(self, sender, *msg);
      return refuse(self, refusal::not_member,
                    "a message from " + msg->from + " before its hello on this link");
    }
    if (!h->cluster_address.empty() && address_taken(st, h->cluster_address, msg->from)) {
      return refuse(self, refusal::not_member,
                    "a hello from " + msg->from + ", which claims the address of another member (" +
                        h->cluster_address + ")");
    }
    if (is_duplicate(st, *msg)) {
      return refuse_duplicate(self, sender, std::move(*msg));
    }
    admit(self, msg->from, sender);
  } else {
    asks_again = hello && hello->again;
  }
  auto from = msg->from;
  deliver(self, *msg, bytes.size());
  if (asks_again) {
    if (auto l = st.links.find(from); l != st.links.end() && l->second == sender) {
      greet_again(self, from, sender);
    }
  }
}

void member_down(node_self self, const std::string& name, std::string reason) {
  auto& st = self->state;
  if (st.members.down(name, reason, std::chrono::system_clock::now())) {
    logs::cluster().warn("member {} is down ({})", name, reason);
  }
  if (auto it = st.links.find(name); it != st.links.end()) {
    st.greeted.erase(it->second.address());
    link_lost(self, name, it->second.address());
    st.links.erase(it);
  }
  st.regreeted.erase(name);
  if (auto* m = st.members.find(name)) {
    address_lost(self, m->cluster_address);
  }
  st.full_sync_due.erase(name);
  st.digest_mismatches.erase(name);
  snapshot_forget(self, name);
  update_placement_owners(self);
  apply_remote_loads(self);
  if (auto d = st.duplicates.find(name); d != st.duplicates.end()) {
    // The node refused for its name is the one left: it is the member now.
    auto dup = std::move(d->second);
    st.duplicates.erase(d);
    self->demonitor(dup.actor.address());
    logs::cluster().info("the other node called {} (at {}) is taken as the member now", name,
                         std::get<protocol::cluster_hello>(dup.hello.body).cluster_address);
    admit(self, name, dup.actor);
    deliver(self, dup.hello, 0); // a hello: no prefix bytes to count
  }
  publish_status(self);
}

void forget_refused(node_self self, const caf::actor_addr& peer) {
  auto& st = self->state;
  bool changed = st.own_name_clashes.erase(peer) > 0;
  for (auto it = st.duplicates.begin(); it != st.duplicates.end();) {
    if (it->second.actor.address() == peer) {
      it = st.duplicates.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  if (changed) {
    publish_status(self);
  }
}

} // namespace troupe::cluster
