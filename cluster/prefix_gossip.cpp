// The shared prefix view between nodes (docs/cluster.md, "Shared prefix view"): each gossip
// tick the node drains the hashes its cache_aware policies' picks recorded and sends them, as
// one `prefix` message per policy within the tick's byte budget, to the members whose hello
// named the same block size (older nodes, and nodes without a view, get none); what members
// send goes to every policy keeping a view, which merges it for the workers it serves. A pick
// that placed blocks new to their worker is not left for the tick: the policy says so and the
// node takes and sends those blocks at once (from the same budget), so that another node
// routing the prefix a moment later finds it. Only hashes travel; no prompt text leaves the
// node.

#include "cluster/node_state.hpp"
#include "services/logs.hpp"

#include <nlohmann/json.hpp>

namespace troupe::cluster {

namespace {

/// Cuts `u` to at most `budget` encoded bytes; returns the hashes left out.
std::uint64_t trim(protocol::prefix_update& u, std::size_t budget) {
  std::size_t used =
      protocol::encoded_size(protocol::prefix_update{u.block_bytes, {}, u.role, u.snapshot});
  std::uint64_t dropped = 0;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < u.workers.size(); ++i) {
    auto& w = u.workers[i];
    auto head = 16 + w.worker.size();
    if (used + head + 8 > budget) {
      dropped += w.hashes.size();
      continue;
    }
    auto room = (budget - used - head) / 8;
    if (w.hashes.size() > room) {
      dropped += w.hashes.size() - room;
      w.hashes.resize(room);
    }
    used += head + 8 * w.hashes.size();
    if (kept != i) {
      u.workers[kept] = std::move(w);
    }
    ++kept;
  }
  u.workers.resize(kept);
  return dropped;
}

/// Below this many bytes left of a tick's budget, fresh blocks wait for the next tick.
std::size_t fresh_min_budget(const node_state& st) {
  return std::min<std::size_t>(1024, st.cfg.prefix_max_bytes_per_tick / 4);
}

/// The linked members that keep a view of this node's block size.
std::vector<peer_actor> prefix_peers(const node_state& st) {
  std::vector<peer_actor> out;
  for (auto& [name, link] : st.links) {
    auto it = st.prefix.peer_block_bytes.find(name);
    if (it != st.prefix.peer_block_bytes.end() && it->second == st.cfg.prefix_block_bytes) {
      out.push_back(link);
    }
  }
  return out;
}

void send_update(node_self self, std::size_t source, actors::prefix_drain& d) {
  auto& st = self->state;
  auto& px = st.prefix;
  auto& [role, policy] = st.deps.prefix_policies[source];
  auto& seen = px.views[source];
  if (st.deps.metrics) {
    st.deps.metrics->set_cluster_prefix_view(
        role, d.stats.blocks, d.stats.evicted - std::min(seen.evicted, d.stats.evicted));
    if (d.stats.dropped > seen.dropped) {
      st.deps.metrics->on_cluster_prefix_hashes("dropped", d.stats.dropped - seen.dropped);
    }
    if (d.stats.unknown > seen.unknown) {
      st.deps.metrics->on_cluster_prefix_hashes("unknown_worker", d.stats.unknown - seen.unknown);
    }
  }
  px.hashes_dropped += d.stats.dropped - std::min(seen.dropped, d.stats.dropped);
  seen = d.stats;
  if (d.update.workers.empty()) {
    return;
  }
  // Members that link later are told these too (join_snapshot.cpp), even when none is linked
  // now: a node alone is where a newcomer's snapshot matters most.
  px.log.add(role, d.update);
  d.update.role = role; // only the receivers' policy of this role merges it
  auto peers = prefix_peers(st);
  if (peers.empty()) {
    return; // nobody to tell: what this node recorded stays in its own view
  }
  if (auto cut = trim(d.update, px.budget)) {
    px.hashes_dropped += cut;
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_prefix_hashes("dropped", cut);
    }
  }
  std::uint64_t hashes = 0;
  for (auto& w : d.update.workers) {
    hashes += w.hashes.size();
  }
  if (hashes == 0) {
    return;
  }
  auto m = envelope(self);
  m.body = std::move(d.update);
  auto bytes = protocol::encode(m);
  px.budget -= std::min(px.budget, bytes.size());
  ++px.updates_sent;
  px.hashes_sent += hashes;
  px.bytes_sent += bytes.size() * peers.size();
  if (st.deps.metrics) {
    st.deps.metrics->on_cluster_prefix_hashes("sent", hashes);
    st.deps.metrics->on_cluster_prefix_bytes("sent", bytes.size() * peers.size());
  }
  for (auto& p : peers) {
    send_encoded(self, p, bytes);
  }
}

/// Asks policy `i` for what its picks recorded (with `fresh_only`, only the blocks new to
/// their worker) and sends it on. One ask per policy at a time.
void drain(node_self self, std::size_t i, bool fresh_only) {
  auto& px = self->state.prefix;
  px.asking[i] = true;
  self->request(self->state.deps.prefix_policies[i].second, caf::infinite, prefix_atom_v,
                fresh_only)
      .then(
          [self, i](actors::prefix_drain& d) {
            self->state.prefix.asking[i] = false;
            if (!self->state.stopping) {
              send_update(self, i, d);
            }
          },
          [self, i](caf::error&) {
            self->state.prefix.asking[i] = false; // the policy is gone: shutting down
          });
}

} // namespace

void start_prefix_gossip(node_self self) {
  auto& st = self->state;
  st.prefix.asking.assign(st.deps.prefix_policies.size(), false);
  st.prefix.views.assign(st.deps.prefix_policies.size(), {});
  st.prefix.budget = st.cfg.prefix_max_bytes_per_tick;
  st.prefix.log = prefix_log{st.deps.prefix_policies.empty() ? 0 : st.cfg.prefix_snapshot_blocks};
  for (auto& [role, policy] : st.deps.prefix_policies) {
    self->send(policy, prefix_atom_v, caf::actor_cast<actors::prefix_sink>(self));
  }
}

void gossip_prefixes(node_self self) {
  auto& st = self->state;
  auto& px = st.prefix;
  px.budget = st.cfg.prefix_max_bytes_per_tick;
  for (std::size_t i = 0; i < st.deps.prefix_policies.size(); ++i) {
    if (!px.asking[i]) { // else the last drain is not back yet (a busy policy)
      drain(self, i, false);
    }
  }
}

void on_fresh_prefixes(node_self self) {
  auto& st = self->state;
  auto& px = st.prefix;
  auto sender = self->current_sender();
  auto& policies = st.deps.prefix_policies;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (caf::actor_cast<caf::strong_actor_ptr>(policies[i].second) != sender) {
      continue;
    }
    // A drain on its way takes these too; with this tick's budget spent, or nobody to tell,
    // the next tick takes them.
    if (px.asking[i] || st.stopping || px.budget < fresh_min_budget(st) ||
        prefix_peers(st).empty()) {
      ++px.fresh_deferred;
      return;
    }
    ++px.fresh_drains;
    drain(self, i, true);
    return;
  }
}

void prefix_peer_hello(node_self self, const std::string& from, const protocol::cluster_hello& h) {
  auto& st = self->state;
  auto& px = st.prefix;
  auto ours = st.deps.prefix_policies.empty() ? 0u : st.cfg.prefix_block_bytes;
  auto before = px.peer_block_bytes.find(from);
  bool changed = before == px.peer_block_bytes.end() || before->second != h.prefix_block_bytes;
  px.peer_block_bytes[from] = h.prefix_block_bytes;
  if (changed && ours != 0 && h.prefix_block_bytes != ours) {
    logs::cluster().warn("member {} {}: the shared prefix view does not cover requests it routes "
                         "(give every node the same --cluster-prefix-block-bytes and a cache_aware "
                         "policy)",
                         from,
                         h.prefix_block_bytes == 0
                             ? std::string{"keeps no shared prefix view"}
                             : "hashes prefix blocks of " + std::to_string(h.prefix_block_bytes) +
                                   " bytes, this node of " + std::to_string(ours));
  }
}

void on_prefix_update(node_self self, const std::string& from, protocol::prefix_update& u,
                      std::size_t bytes) {
  auto& st = self->state;
  auto& px = st.prefix;
  ++px.updates_received;
  px.bytes_received += bytes;
  std::uint64_t hashes = 0;
  for (auto& w : u.workers) {
    hashes += w.hashes.size();
  }
  if (st.deps.metrics) {
    st.deps.metrics->on_cluster_prefix_bytes("received", bytes);
  }
  if (u.snapshot) {
    snapshot_received(self, 0, hashes); // a member linked anew told its recent placements
  } else {
    px.hashes_received += hashes;
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_prefix_hashes("received", hashes);
    }
  }
  if (st.deps.prefix_policies.empty()) {
    ++px.without_view;
    return;
  }
  if (u.block_bytes != st.cfg.prefix_block_bytes) {
    if (px.refused_block_size++ == 0) {
      logs::cluster().warn("member {} sent prefix blocks of {} bytes, this node hashes {}: "
                           "ignored (give every node the same --cluster-prefix-block-bytes)",
                           from, u.block_bytes, st.cfg.prefix_block_bytes);
    }
    return;
  }
  // Only the policy of the role whose picks these are merges them (an older sender names no
  // role: every policy does, and each keeps the workers it serves).
  std::vector<actors::policy_actor> to;
  for (auto& [role, policy] : st.deps.prefix_policies) {
    if (u.role.empty() || u.role == role) {
      to.push_back(policy);
    }
  }
  if (to.empty()) {
    ++px.other_role; // say, prefill picks and this node's prefill policy keeps no view
    return;
  }
  for (std::size_t i = 0; i + 1 < to.size(); ++i) {
    self->send(to[i], prefix_atom_v, u);
  }
  self->send(to.back(), prefix_atom_v, std::move(u));
}

nlohmann::json prefix_gossip_status(const node_state& st) {
  auto& px = st.prefix;
  auto views = nlohmann::json::object();
  for (std::size_t i = 0; i < st.deps.prefix_policies.size() && i < px.views.size(); ++i) {
    auto& v = px.views[i];
    views[st.deps.prefix_policies[i].first] = {
        {"blocks", v.blocks}, {"distinct_blocks", v.distinct}, {"evicted", v.evicted},
        {"merged", v.merged}, {"unknown_worker", v.unknown},   {"dropped", v.dropped}};
  }
  auto peers = nlohmann::json::object();
  for (auto& [name, bb] : px.peer_block_bytes) {
    peers[name] = bb;
  }
  return {{"block_bytes", st.deps.prefix_policies.empty() ? 0u : st.cfg.prefix_block_bytes},
          {"max_bytes_per_tick", st.cfg.prefix_max_bytes_per_tick},
          {"updates_sent", px.updates_sent},
          {"updates_received", px.updates_received},
          {"bytes_sent", px.bytes_sent},
          {"bytes_received", px.bytes_received},
          {"hashes_sent", px.hashes_sent},
          {"hashes_received", px.hashes_received},
          {"hashes_dropped", px.hashes_dropped},
          {"fresh_drains", px.fresh_drains},
          {"fresh_deferred", px.fresh_deferred},
          {"refused_block_size", px.refused_block_size},
          {"without_view", px.without_view},
          {"other_role", px.other_role},
          {"members", std::move(peers)},
          {"views", std::move(views)}};
}

} // namespace troupe::cluster
