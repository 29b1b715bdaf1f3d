// What the cluster node shows: the cluster view (admin endpoints, metrics), the peers' load in
// each worker's live state, and its own state for `/admin/actors`.

#include "cluster/node_state.hpp"
#include "services/logs.hpp"

#include <nlohmann/json.hpp>

namespace troupe::cluster {

void publish_status(node_self self) {
  auto& st = self->state;
  auto status = std::make_shared<services::cluster_status>();
  status->enabled = st.cfg.networked;
  status->self = st.cfg.name;
  status->transport = !st.cfg.networked ? "" : st.cfg.tls ? "tls" : "plain";
  status->registry_digest = st.fleet ? st.fleet->digest : 0;
  services::member_status me;
  me.name = st.cfg.name;
  me.api_address = st.cfg.api_address;
  me.cluster_address = st.cfg.cluster_address;
  me.state = "up";
  me.self = true;
  me.incarnation = st.incarnation;
  status->members.push_back(std::move(me));
  for (auto& [name, m] : st.members.members()) {
    services::member_status s;
    s.name = m.name;
    s.api_address = m.api_address;
    s.cluster_address = m.cluster_address;
    s.state = std::string(to_string(m.state));
    s.incarnation = m.incarnation;
    s.last_heard = m.last_heard;
    s.since = m.since;
    s.reason = m.reason;
    s.registry_version = m.registry_version;
    s.shared_version = m.shared_version;
    s.registry_digest = m.registry_digest;
    s.workers = m.workers;
    s.loads = m.loads;
    status->members.push_back(std::move(s));
  }
  for (auto& [name, d] : st.duplicates) {
    status->name_conflicts.push_back(
        {name, d.member_address, std::get<protocol::cluster_hello>(d.hello.body).cluster_address,
         d.since});
  }
  for (auto& [peer, clash] : st.own_name_clashes) {
    status->name_conflicts.push_back({st.cfg.name, st.cfg.cluster_address,
                                      clash.first.empty() ? "(unknown)" : clash.first,
                                      clash.second});
  }
  st.deps.view->set(std::move(status));
  if (st.deps.metrics && st.cfg.networked) {
    st.deps.metrics->set_cluster_members(1 + st.members.count(member_state::up),
                                         st.members.count(member_state::suspect),
                                         st.members.count(member_state::down));
  }
}

void apply_remote_loads(node_self self) {
  auto& st = self->state;
  auto& sums = st.members.remote_loads();
  for (auto& id : st.members.take_changed()) {
    if (auto w = st.live_by_id.find(id); w != st.live_by_id.end()) {
      auto sum = sums.find(id);
      w->second->remote_in_flight.store(sum == sums.end() ? 0 : sum->second,
                                        std::memory_order_relaxed);
    }
  }
}

void apply_all_remote_loads(node_self self) {
  auto& st = self->state;
  st.members.take_changed();
  st.live_by_id.clear();
  if (!st.fleet) {
    return;
  }
  auto& sums = st.members.remote_loads();
  for (auto& w : st.fleet->workers) {
    st.live_by_id.emplace(w->id, w->live);
    auto it = sums.find(w->id);
    w->live->remote_in_flight.store(it == sums.end() ? 0 : it->second, std::memory_order_relaxed);
  }
}

void take_frame_refusals(node_self self) {
  auto& st = self->state;
  auto now = frame_refusals();
  auto& seen = st.frames_seen;
  struct cause {
    std::uint64_t now, seen;
    refusal reason;
    const char* what;
  };
  for (auto c : {cause{now.too_large, seen.too_large, refusal::frame_too_large,
                       "BASP frame(s) claiming more than the limit"},
                 cause{now.routed, seen.routed, refusal::routed_message, "routed BASP message(s)"},
                 cause{now.named, seen.named, refusal::named_receiver,
                       "BASP message(s) to a named system actor"}}) {
    if (c.now > c.seen) {
      st.deps.refusals->add(c.reason, c.now - c.seen);
      logs::cluster().warn("refused {} {} and closed their connections ({} so far)", c.now - c.seen,
                           c.what, c.now);
    }
  }
  seen = now;
}

nlohmann::json inspect_state(node_self self) {
  auto& st = self->state;
  auto dials = nlohmann::json::array();
  for (auto& [address, d] : st.dials.entries()) {
    dials.push_back({{"address", address},
                     {"seed", d.seed},
                     {"dialed_by", st.cfg.cluster_address < address ? "this node" : "the peer"},
                     {"self", d.self},
                     {"connecting", d.connecting},
                     {"linked", linked(st, address)},
                     {"failures", d.failures},
                     {"last_error", d.last_error},
                     {"tls_diagnosis", d.diagnosis}});
  }
  auto refused = nlohmann::json::object();
  for (auto r : all_refusals()) {
    refused[std::string(to_string(r))] = st.deps.refusals->get(r);
  }
  return {{"kind", "cluster_node"},
          {"name", "cluster_node"},
          {"id", self->id()},
          {"node", st.cfg.name},
          {"networked", st.cfg.networked},
          {"transport", !st.cfg.networked ? "none"
                        : st.cfg.tls      ? "tls"
                                          : "plain"},
          {"cluster_address", st.cfg.cluster_address},
          {"members_up", st.members.count(member_state::up)},
          {"members_suspect", st.members.count(member_state::suspect)},
          {"members_down", st.members.count(member_state::down)},
          {"links", st.links.size()},
          {"awaiting_dial_from_peer", st.awaiting.size()},
          {"dials", std::move(dials)},
          {"dials_given_up", st.dials.dropped()},
          {"messages_in", st.messages_in},
          {"messages_out", st.messages_out},
          {"bytes_in", st.bytes_in},
          {"bytes_out", st.bytes_out},
          {"cpu_seconds", static_cast<double>(st.cpu_ns) / 1e9},
          {"refused", std::move(refused)},
          {"refused_total", st.deps.refusals->total()},
          {"decode_errors", st.deps.refusals->get(refusal::malformed)},
          {"last_decode_error", st.last_decode_error},
          {"max_message_bytes", st.cfg.max_message_bytes},
          {"frame_limit_bytes", frame_limit()},
          {"frame_guard", frame_guard_active()},
          {"full_syncs_sent", st.full_syncs_sent},
          {"full_syncs_received", st.full_syncs_received},
          {"full_syncs_waiting", st.full_sync_due.size()},
          {"records_received", st.records_received},
          {"relays", st.relays},
          {"greetings_asked", st.greetings_asked},
          {"regreets", st.regreets},
          {"awaiting_hello", st.unanswered.size()},
          {"load_reports_sent", st.load_reports_sent},
          {"load_deltas_sent", st.load_deltas_sent},
          {"load_entries_sent", st.load_entries_sent},
          {"writes_confirmed_by_peer", st.writes_confirmed_by_peer},
          {"writes_confirmed_by_state_file", st.writes_confirmed_by_file},
          {"writes_unconfirmed", st.writes_unconfirmed},
          {"writes_waiting", st.unconfirmed_writes.size() + st.save_waiters.size()},
          {"keys_withheld", st.keys_withheld},
          {"records_too_large", st.records_too_large},
          {"state_file", st.cfg.state_file},
          {"saves", st.saves},
          {"last_save_error", st.last_save_error},
          {"prefix_view", prefix_gossip_status(st)},
          {"placement", placement_status(st)},
          {"response_affinity", response_gossip_status(st)},
          {"join_snapshots", join_snapshot_status(st)},
          {"mailbox_size", self->mailbox().size()}};
}

} // namespace troupe::cluster
