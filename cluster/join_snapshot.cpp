// A member that links late (a new node, or one that restarted) has none of the cluster's recent
// past: which worker stores each Responses object the others saw created, and which worker the
// others' picks sent each prefix. Without it, a follow-up through the new node searches the
// workers and a shared prompt may go to a worker that does not hold it. So once per new
// verified link (admit, node_receive.cpp) the node owes the member a snapshot: the newest
// `response_snapshot_ids` ids of its Responses affinity (its own and its peers': a member that
// died leaves its ids with the others) to a member that reads them, and the newest
// `prefix_snapshot_blocks` blocks of its own picks (cluster/prefix_log.hpp: each node tells its
// own, so nothing is sent twice) to a member keeping a view of the same block size, each split
// to fit `max_message_bytes`. It goes when the member's load report shows this node's registry
// digest (it holds the workers the snapshot names, and keeps only those), or after
// `snapshot_wait` whatever the registries. Strangers and members of a link not verified get
// nothing: only `links` (members by their hello) are owed one.

#include "cluster/node_state.hpp"
#include "protocol/prefix_wire.hpp"
#include "protocol/response_wire.hpp"
#include "services/logs.hpp"

#include <nlohmann/json.hpp>

namespace troupe::cluster {

namespace {

/// Bytes of a message that are not the body (envelope: version, node name, times, flags).
std::size_t body_room(const node_state& st) {
  auto envelope = 256 + st.cfg.name.size();
  return st.cfg.max_message_bytes > envelope ? st.cfg.max_message_bytes - envelope : 0;
}

void send_body(node_self self, const peer_actor& to, protocol::cluster_message m) {
  auto& js = self->state.snapshots;
  auto bytes = protocol::encode(m);
  ++js.messages_sent;
  js.bytes_sent += bytes.size();
  send_encoded(self, to, std::move(bytes));
}

std::uint64_t send_response_ids(node_self self, const std::string& name, const peer_actor& to) {
  auto& st = self->state;
  auto& js = st.snapshots;
  if (!st.deps.responses || !st.responses.readers.count(name) ||
      st.cfg.response_snapshot_ids == 0) {
    return 0;
  }
  auto ids = st.deps.responses->snapshot(st.cfg.response_snapshot_ids);
  // Only ids of workers this node serves: the member would drop the others anyway.
  std::erase_if(ids, [&](auto& p) { return !st.live_by_id.count(p.second); });
  std::size_t too_large = 0;
  std::uint64_t n = 0;
  for (auto& u : protocol::split_responses(std::move(ids), body_room(st), too_large)) {
    n += u.responses.size();
    u.snapshot = true;
    auto m = envelope(self);
    m.body = std::move(u);
    send_body(self, to, std::move(m));
  }
  js.too_large += too_large;
  js.response_ids_sent += n;
  if (st.deps.metrics && n > 0) {
    st.deps.metrics->on_cluster_response_ids("snapshot_sent", n);
  }
  return n;
}

std::uint64_t send_prefix_blocks(node_self self, const std::string& name, const peer_actor& to) {
  auto& st = self->state;
  auto& js = st.snapshots;
  auto bb = st.prefix.peer_block_bytes.find(name);
  if (st.deps.prefix_policies.empty() || st.cfg.prefix_snapshot_blocks == 0 ||
      bb == st.prefix.peer_block_bytes.end() || bb->second != st.cfg.prefix_block_bytes) {
    return 0;
  }
  auto updates = st.prefix.log.snapshot(
      st.cfg.prefix_snapshot_blocks, st.cfg.prefix_block_bytes,
      [&](const std::string& worker) { return st.live_by_id.count(worker) > 0; });
  std::uint64_t n = 0;
  for (auto& whole : updates) {
    std::uint64_t too_large = 0;
    for (auto& u : protocol::split_prefixes(std::move(whole), body_room(st), too_large)) {
      for (auto& w : u.workers) {
        n += w.hashes.size();
      }
      auto m = envelope(self);
      m.body = std::move(u);
      send_body(self, to, std::move(m));
    }
    js.too_large += too_large;
  }
  js.prefix_blocks_sent += n;
  if (st.deps.metrics && n > 0) {
    st.deps.metrics->on_cluster_prefix_hashes("snapshot_sent", n);
  }
  return n;
}

/// Sends member `name` its snapshot now (on its current link).
void send_snapshot(node_self self, const std::string& name, bool in_sync) {
  auto& st = self->state;
  auto& js = st.snapshots;
  js.due.erase(name);
  auto link = st.links.find(name);
  if (link == st.links.end() || st.stopping) {
    return;
  }
  auto to = link->second;
  auto ids = send_response_ids(self, name, to);
  auto blocks = send_prefix_blocks(self, name, to);
  ++js.snapshots_sent;
  if (!in_sync) {
    ++js.sent_unsynced;
  }
  if (ids + blocks > 0) {
    logs::cluster().info("sent {} a snapshot: {} response id(s), {} prefix block(s){}", name, ids,
                         blocks, in_sync ? "" : " (its registry still differs from ours)");
  }
}

} // namespace

void snapshot_due(node_self self, const std::string& name) {
  auto& st = self->state;
  st.snapshots.due[name] = steady_now(self) + st.cfg.snapshot_wait;
}

void snapshot_on_load(node_self self, const std::string& from, std::uint64_t registry_digest) {
  auto& st = self->state;
  if (st.snapshots.due.count(from) && st.fleet && registry_digest == st.fleet->digest) {
    send_snapshot(self, from, true);
  }
}

void send_due_snapshots(node_self self) {
  auto& st = self->state;
  auto now = steady_now(self);
  std::vector<std::string> late;
  for (auto& [name, deadline] : st.snapshots.due) {
    if (now >= deadline) {
      late.push_back(name);
    }
  }
  for (auto& name : late) {
    send_snapshot(self, name, false);
  }
}

void snapshot_forget(node_self self, const std::string& name) {
  self->state.snapshots.due.erase(name);
}

void snapshot_received(node_self self, std::uint64_t response_ids, std::uint64_t prefix_blocks) {
  auto& st = self->state;
  auto& js = st.snapshots;
  ++js.messages_received;
  js.response_ids_received += response_ids;
  js.prefix_blocks_received += prefix_blocks;
  if (st.deps.metrics) {
    if (response_ids > 0) {
      st.deps.metrics->on_cluster_response_ids("snapshot_received", response_ids);
    }
    if (prefix_blocks > 0) {
      st.deps.metrics->on_cluster_prefix_hashes("snapshot_received", prefix_blocks);
    }
  }
}

nlohmann::json join_snapshot_status(const node_state& st) {
  auto& js = st.snapshots;
  auto due = nlohmann::json::array();
  for (auto& [name, at] : js.due) {
    due.push_back(name);
  }
  return {{"response_ids_max", st.cfg.response_snapshot_ids},
          {"prefix_blocks_max", st.cfg.prefix_snapshot_blocks},
          {"prefix_log_blocks", st.prefix.log.size()},
          {"prefix_log_evicted", st.prefix.log.evicted()},
          {"snapshots_sent", js.snapshots_sent},
          {"sent_unsynced", js.sent_unsynced},
          {"messages_sent", js.messages_sent},
          {"bytes_sent", js.bytes_sent},
          {"response_ids_sent", js.response_ids_sent},
          {"prefix_blocks_sent", js.prefix_blocks_sent},
          {"too_large", js.too_large},
          {"messages_received", js.messages_received},
          {"response_ids_received", js.response_ids_received},
          {"prefix_blocks_received", js.prefix_blocks_received},
          {"due", std::move(due)}};
}

} // namespace troupe::cluster
