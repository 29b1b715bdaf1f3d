// What the cluster node does with what peers send, and who counts as a member: an actor that
// said hello over its link (this node dialed it, or it dialed this node). Anything else an
// actor sends before its hello is refused and counted, as is a hello that claims the address
// of another member. With TLS only holders of a certificate from the cluster CA can link at
// all; without TLS anyone who reaches the port can (docs/cluster.md, "Securing a cluster").

#include "cluster/node_state.hpp"
#include "services/logs.hpp"

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
  self->monitor(sender);
  greet(self, name, sender);
}

void on_hello(node_self self, const std::string& from, const protocol::cluster_hello& h) {
  auto& st = self->state;
  if (auto* m = st.members.find(from)) {
    m->api_address = h.api_address;
    if (!h.cluster_address.empty()) {
      m->cluster_address = h.cluster_address;
    }
  }
  learn(self, h.cluster_address);
  for (auto& p : h.peers) {
    learn(self, p);
  }
}

void on_sync(node_self self, const std::string& from, protocol::registry_sync& s) {
  auto& st = self->state;
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
  if (!s.records.empty()) {
    self->send(st.deps.registry, merge_atom_v, actors::record_batch(std::move(s.records)));
  }
}

void on_load(node_self self, const std::string& from, const protocol::load_report& r) {
  auto& st = self->state;
  if (st.members.report(from, r)) {
    apply_remote_loads(self);
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

/// A message of member `sender`.
void deliver(node_self self, protocol::cluster_message& msg) {
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
          on_load(self, msg.from, body);
          status_changed = true;
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
    logs::cluster().error("a peer calls itself {}, as this node does: give each node its own "
                          "--node-name",
                          msg->from);
    return refuse(self, refusal::name_clash, "a message from a peer named like this node");
  }
  auto link = st.links.find(msg->from);
  if (link == st.links.end() || link->second != sender) {
    auto* h = std::get_if<protocol::cluster_hello>(&msg->body);
    if (std::holds_alternative<protocol::cluster_bye>(msg->body)) {
      return; // a goodbye of a link that is not the member's current one: nothing to drop
    }
    if (!h) {
      return refuse(self, refusal::not_member,
                    "a message from " + msg->from + " before its hello on this link");
    }
    if (!h->cluster_address.empty() && address_taken(st, h->cluster_address, msg->from)) {
      return refuse(self, refusal::not_member,
                    "a hello from " + msg->from + ", which claims the address of another member (" +
                        h->cluster_address + ")");
    }
    admit(self, msg->from, sender);
  }
  deliver(self, *msg);
}

void member_down(node_self self, const std::string& name, std::string reason) {
  auto& st = self->state;
  if (st.members.down(name, reason, std::chrono::system_clock::now())) {
    logs::cluster().warn("member {} is down ({})", name, reason);
  }
  if (auto it = st.links.find(name); it != st.links.end()) {
    st.greeted.erase(it->second.address());
    st.links.erase(it);
  }
  if (auto* m = st.members.find(name)) {
    address_lost(self, m->cluster_address);
  }
  st.full_sync_due.erase(name);
  st.digest_mismatches.erase(name);
  apply_remote_loads(self);
  publish_status(self);
}

} // namespace troupe::cluster
