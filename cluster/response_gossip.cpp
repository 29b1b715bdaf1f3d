// The shared Responses affinity between nodes (docs/cluster.md, "Responses affinity"): a
// Responses object lives on the worker that created it, and the node that relayed the create
// remembers which worker that is. Each gossip tick the node drains the ids it learned since the
// last tick (never those members told it: no echo) and sends them as `responses` messages,
// split to fit the message cap, to the members whose hello named `resp` (older nodes get none).
// A member receiving them remembers those whose worker it serves, so a request naming such a
// response through any node goes straight to its worker instead of searching the workers
// (actors/request/response_locate.cpp). Only ids travel: no response content.

#include "cluster/node_state.hpp"
#include "protocol/response_wire.hpp"
#include "services/logs.hpp"

#include <nlohmann/json.hpp>

namespace troupe::cluster {

namespace {

/// Bytes of a message that are not the body (envelope: version, node name, times).
std::size_t envelope_room(const node_state& st) {
  return 256 + st.cfg.name.size();
}

/// The linked members that read response updates.
std::vector<peer_actor> response_readers(const node_state& st) {
  std::vector<peer_actor> out;
  for (auto& [name, link] : st.links) {
    if (st.responses.readers.count(name)) {
      out.push_back(link);
    }
  }
  return out;
}

/// The affinity's own counts, into the metrics.
void publish_counts(node_state& st) {
  auto c = st.deps.responses->stats();
  auto dropped = c.outbox_dropped - std::min(st.responses.outbox_dropped_seen, c.outbox_dropped);
  st.responses.outbox_dropped_seen = c.outbox_dropped;
  if (st.deps.metrics) {
    st.deps.metrics->set_response_affinity_ids(c.held);
    if (dropped > 0) {
      st.deps.metrics->on_cluster_response_ids("dropped", dropped);
    }
  }
}

} // namespace

void gossip_responses(node_self self) {
  auto& st = self->state;
  auto& rs = st.responses;
  if (!st.deps.responses) {
    return;
  }
  publish_counts(st);
  auto peers = response_readers(st);
  if (peers.empty()) {
    // Nobody to tell: a member that links later is told every id this node remembers in its
    // snapshot (join_snapshot.cpp), so these need not wait (and arrive twice).
    rs.left_for_snapshots += st.deps.responses->clear_outbox();
    return;
  }
  auto ids = st.deps.responses->take_outbox(response_ids_per_tick);
  if (ids.empty()) {
    return;
  }
  auto room = st.cfg.max_message_bytes > envelope_room(st)
                  ? st.cfg.max_message_bytes - envelope_room(st)
                  : std::size_t{0};
  std::size_t too_large = 0;
  auto updates = protocol::split_responses(std::move(ids), room, too_large);
  if (too_large > 0) {
    rs.too_large += too_large;
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_response_ids("dropped", too_large);
    }
  }
  for (auto& u : updates) {
    auto n = u.responses.size();
    auto m = envelope(self);
    m.body = std::move(u);
    auto bytes = protocol::encode(m);
    ++rs.updates_sent;
    rs.ids_sent += n;
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_response_ids("sent", n);
    }
    for (auto& p : peers) {
      send_encoded(self, p, bytes);
    }
  }
}

void response_peer_hello(node_self self, const std::string& from,
                         const protocol::cluster_hello& h) {
  auto& rs = self->state.responses;
  if (h.responses) {
    rs.readers.insert(from);
  } else {
    rs.readers.erase(from);
  }
}

void on_response_update(node_self self, const std::string& from, protocol::response_update& u) {
  auto& st = self->state;
  auto& rs = st.responses;
  ++rs.updates_received;
  if (!st.deps.responses) {
    ++rs.without_affinity;
    return;
  }
  std::uint64_t taken = 0;
  std::uint64_t unknown = 0;
  for (auto& [id, worker] : u.responses) {
    // A worker this node does not serve (not registered here yet, or gone): a request naming
    // the response would find no worker to go to; it searches instead.
    if (!st.live_by_id.count(worker)) {
      ++unknown;
      continue;
    }
    st.deps.responses->remember_remote(std::move(id), std::move(worker));
    ++taken;
  }
  rs.unknown_worker += unknown;
  if (u.snapshot) {
    snapshot_received(self, taken, 0); // a member told this node, linked anew, what it knows
  } else {
    rs.ids_received += taken;
    if (st.deps.metrics) {
      st.deps.metrics->on_cluster_response_ids("received", taken);
    }
  }
  if (st.deps.metrics) {
    if (unknown > 0) {
      st.deps.metrics->on_cluster_response_ids("unknown_worker", unknown);
    }
  }
  if (unknown > 0 && rs.unknown_worker == unknown) {
    logs::cluster().info("member {} named response(s) stored on a worker this node does not "
                         "serve: not remembered (counted in unknown_worker)",
                         from);
  }
}

nlohmann::json response_gossip_status(const node_state& st) {
  auto& rs = st.responses;
  auto j = nlohmann::json{{"shared", st.deps.responses != nullptr},
                          {"updates_sent", rs.updates_sent},
                          {"updates_received", rs.updates_received},
                          {"ids_sent", rs.ids_sent},
                          {"ids_received", rs.ids_received},
                          {"unknown_worker", rs.unknown_worker},
                          {"too_large", rs.too_large},
                          {"without_affinity", rs.without_affinity},
                          {"left_for_snapshots", rs.left_for_snapshots},
                          {"members", rs.readers}};
  if (st.deps.responses) {
    auto c = st.deps.responses->stats();
    j["ids_held"] = c.held;
    j["outbox"] = c.queued;
    j["outbox_dropped"] = c.outbox_dropped;
    j["from_peers"] = c.from_peers;
    j["expired"] = c.expired;
  }
  return j;
}

} // namespace troupe::cluster
