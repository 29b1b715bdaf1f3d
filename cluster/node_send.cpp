// What the cluster node sends to its peers: envelopes, hellos, registry records (without api
// keys unless links are TLS, split to fit the message limit) and load reports.

#include "cluster/node_state.hpp"
#include "services/logs.hpp"

#include <algorithm>
#include <caf/send.hpp>

namespace troupe::cluster {

namespace {

using protocol::cluster_message;

void send_bytes(node_self self, const peer_actor& to, std::string bytes) {
  auto& st = self->state;
  ++st.messages_out;
  st.bytes_out += bytes.size();
  // As the endpoint: peers answer it, and never learn of the node actor.
  caf::send_as(st.endpoint, to, gossip_atom_v, std::move(bytes));
}

/// `records` as they may leave this node: a link without TLS carries no api key (the record
/// says that one was left out, so the receiver can use its own).
actors::record_batch outgoing(node_self self, actors::record_batch records) {
  auto& st = self->state;
  if (st.cfg.tls) {
    return records;
  }
  for (auto& r : records) {
    if (!r.spec.api_key.empty()) {
      r.spec.api_key.clear();
      r.key_withheld = true;
      ++st.keys_withheld;
    }
  }
  return records;
}

/// Sync messages holding `records`, each within the message limit.
std::vector<cluster_message> sync_messages(node_self self, actors::record_batch records, bool full,
                                           std::uint64_t sync_id) {
  auto& st = self->state;
  std::vector<std::string> too_large;
  auto groups = protocol::split_records(outgoing(self, std::move(records)),
                                        st.cfg.max_message_bytes, too_large);
  for (auto& id : too_large) {
    ++st.records_too_large;
    logs::cluster().error("the record of worker {} is larger than --cluster-max-message-bytes "
                          "({} bytes): not replicated",
                          id, st.cfg.max_message_bytes);
  }
  std::vector<cluster_message> out;
  for (auto& g : groups) {
    if (g.empty() && !full) {
      continue;
    }
    auto m = envelope(self);
    m.body = protocol::registry_sync{full, std::move(g), sync_id};
    out.push_back(std::move(m));
  }
  return out;
}

/// Sends the whole registry to member `name` (on its current link).
void full_sync(node_self self, const std::string& name) {
  auto& st = self->state;
  auto link = st.links.find(name);
  if (link == st.links.end()) {
    return;
  }
  st.syncs.sent(name, steady_now(self));
  auto to = link->second;
  auto id = ++st.sync_seq;
  self->request(st.deps.registry, caf::infinite, records_atom_v)
      .then(
          [self, to, id](actors::record_batch& records) {
            if (self->state.stopping) {
              return;
            }
            ++self->state.full_syncs_sent;
            for (auto& m : sync_messages(self, std::move(records), true, id)) {
              send_bytes(self, to, protocol::encode(m));
            }
          },
          [](caf::error&) {
            // The registry is gone: the node is shutting down.
          });
}

} // namespace

void send_hello(node_self self, const peer_actor& to, bool again) {
  auto& st = self->state;
  protocol::cluster_hello h;
  h.again = again;
  h.api_address = st.cfg.api_address;
  h.cluster_address = st.cfg.cluster_address;
  h.acks = true;
  h.deltas = true;
  h.prefix_block_bytes = st.deps.prefix_policies.empty() ? 0 : st.cfg.prefix_block_bytes;
  h.responses = st.deps.responses != nullptr && st.cfg.networked;
  h.placement = answers_placement(st);
  for (auto& [name, m] : st.members.members()) {
    if (!m.cluster_address.empty() && m.state != member_state::down && st.links.count(name)) {
      h.peers.push_back(m.cluster_address);
    }
  }
  auto m = envelope(self);
  m.body = std::move(h);
  send_bytes(self, to, protocol::encode(m));
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

cluster_message envelope(node_self self) {
  cluster_message m;
  m.from = self->state.cfg.name;
  m.incarnation = self->state.incarnation;
  m.sent_ms = wall_ms();
  return m;
}

void send_to(node_self self, const peer_actor& to, const cluster_message& m) {
  send_bytes(self, to, protocol::encode(m));
}

void broadcast(node_self self, const cluster_message& m) {
  auto& st = self->state;
  if (st.links.empty()) {
    return;
  }
  // Encoded once for every peer.
  auto bytes = protocol::encode(m);
  for (auto& [name, link] : st.links) {
    send_bytes(self, link, bytes);
  }
}

void broadcast_records(node_self self, actors::record_batch records,
                       const std::set<std::string>& except) {
  auto& st = self->state;
  if (st.links.size() <= except.size() &&
      std::all_of(st.links.begin(), st.links.end(),
                  [&](auto& kv) { return except.count(kv.first) > 0; })) {
    return;
  }
  for (auto& m : sync_messages(self, std::move(records), false, 0)) {
    auto bytes = protocol::encode(m); // once for every peer
    for (auto& [name, link] : st.links) {
      if (!except.count(name)) {
        send_bytes(self, link, bytes);
      }
    }
  }
}

void greet(node_self self, const std::string& name, const peer_actor& to, bool again) {
  auto& st = self->state;
  if (st.greeted.insert(to.address()).second) {
    send_hello(self, to, again);
    send_whole_load(self, to); // the base its deltas build on
  }
  if (!name.empty()) {
    request_full_sync(self, name);
  }
}

void request_full_sync(node_self self, const std::string& name) {
  auto& st = self->state;
  if (st.syncs.may_send(name, steady_now(self))) {
    st.full_sync_due.erase(name);
    full_sync(self, name);
  } else {
    st.full_sync_due.insert(name); // sent by a later tick
  }
}

void send_due_full_syncs(node_self self) {
  auto& st = self->state;
  auto now = steady_now(self);
  for (auto it = st.full_sync_due.begin(); it != st.full_sync_due.end();) {
    if (!st.links.count(*it)) {
      it = st.full_sync_due.erase(it);
    } else if (st.syncs.may_send(*it, now)) {
      auto name = *it;
      it = st.full_sync_due.erase(it);
      full_sync(self, name);
    } else {
      ++it;
    }
  }
}

namespace {

protocol::load_report load_header(node_self self) {
  auto& st = self->state;
  protocol::load_report r;
  r.seq = st.seq;
  r.registry_digest = st.fleet->digest;
  r.registry_version = st.fleet->version;
  r.shared_version = st.fleet->shared_version;
  r.workers = static_cast<std::uint32_t>(st.fleet->workers.size());
  for (auto& [name, m] : st.members.members()) {
    if (m.needs_full && m.state != member_state::down) {
      r.resend.push_back(name);
    }
  }
  return r;
}

std::string whole_load(node_self self) {
  auto& st = self->state;
  auto r = load_header(self);
  r.full = true;
  r.loads.assign(st.last_sent_loads.begin(), st.last_sent_loads.end());
  auto m = envelope(self);
  m.body = std::move(r);
  ++st.load_reports_sent;
  st.load_entries_sent += st.last_sent_loads.size();
  return protocol::encode(m);
}

} // namespace

void send_whole_load(node_self self, const peer_actor& to) {
  if (self->state.fleet) {
    send_bytes(self, to, whole_load(self));
  }
}

void send_encoded(node_self self, const peer_actor& to, std::string bytes) {
  send_bytes(self, to, std::move(bytes));
}

void report_load(node_self self) {
  auto& st = self->state;
  if (!st.fleet) {
    return;
  }
  // What changed since the last report: one pass over the fleet, no map built anew.
  std::vector<std::pair<std::string, std::int32_t>> delta;
  std::size_t nonzero = 0;
  for (auto& w : st.fleet->workers) {
    auto n = w->live->local_load();
    nonzero += n > 0;
    auto it = st.last_sent_loads.find(w->id);
    int before = it == st.last_sent_loads.end() ? 0 : it->second;
    if (n != before) {
      delta.emplace_back(w->id, n);
    }
  }
  if (nonzero + delta.size() < st.last_sent_loads.size()) {
    // Workers that left the fleet with load: they are at 0 now.
    std::unordered_map<std::string, bool> live;
    for (auto& w : st.fleet->workers) {
      live.emplace(w->id, true);
    }
    for (auto& [id, n] : st.last_sent_loads) {
      if (!live.count(id)) {
        delta.emplace_back(id, 0);
      }
    }
  }
  auto now = steady_now(self);
  if (delta.empty() && now - st.last_report < st.cfg.keepalive && st.whole_load_due.empty()) {
    return;
  }
  for (auto& [id, n] : delta) {
    if (n > 0) {
      st.last_sent_loads[id] = n;
    } else {
      st.last_sent_loads.erase(id);
    }
  }
  ++st.seq;
  st.last_report = now;
  std::string delta_bytes;
  std::string whole_bytes;
  for (auto& [name, link] : st.links) {
    auto* m = st.members.find(name);
    bool whole = !m || !m->deltas || st.whole_load_due.count(name);
    auto& bytes = whole ? whole_bytes : delta_bytes;
    if (bytes.empty()) {
      if (whole) {
        bytes = whole_load(self);
      } else {
        auto r = load_header(self);
        r.full = false;
        ++st.load_reports_sent;
        ++st.load_deltas_sent;
        st.load_entries_sent += delta.size();
        r.loads = delta;
        auto msg = envelope(self);
        msg.body = std::move(r);
        bytes = protocol::encode(msg); // once for every peer
      }
    }
    send_bytes(self, link, bytes);
  }
  st.whole_load_due.clear();
}

} // namespace troupe::cluster
