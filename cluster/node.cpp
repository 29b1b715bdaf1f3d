// The cluster node actor: its behaviour, start and stop. What it sends, receives, dials and
// shows lives in node_send.cpp, node_receive.cpp, node_dial.cpp and node_status.cpp; when its
// writes are durable (and the state file) in node_durable.cpp (see node_state.hpp).

#include "cluster/node.hpp"

#include "actors/errors.hpp"
#include "cluster/cpu_meter.hpp"
#include "cluster/node_state.hpp"
#include "services/logs.hpp"

#include <functional>
#include <nlohmann/json.hpp>
#include <random>

namespace troupe::cluster {

namespace {

// -- periodic work --

void tick(node_self self) {
  auto& st = self->state;
  if (st.stopping) {
    return;
  }
  take_frame_refusals(self);
  report_load(self);
  expire_unconfirmed(self);
  gossip_prefixes(self);
  gossip_responses(self);
  expire_placements(self);
  auto changed = st.members.expire(steady_now(self), std::chrono::system_clock::now());
  for (auto& name : changed) {
    auto* m = st.members.find(name);
    if (!m) {
      st.syncs.forget(name); // forgotten
      continue;
    }
    if (m->state == member_state::down) {
      logs::cluster().warn("member {} is down ({})", name, m->reason);
    } else {
      logs::cluster().info("member {} is {} (silent)", name, to_string(m->state));
    }
  }
  if (!changed.empty()) {
    apply_remote_loads(self);
    publish_status(self);
  }
  send_due_full_syncs(self);
  send_due_snapshots(self);
  dial_all(self);
  self->delayed_send(self, st.cfg.gossip_interval, tick_atom_v);
}

void on_down(node_self self, caf::down_msg& dm) {
  auto& st = self->state;
  dial_lost(self, dm.source);
  forget_refused(self, dm.source);
  for (auto& [name, link] : st.links) {
    if (link.address() == dm.source) {
      auto reason = dm.reason ? self->system().render(dm.reason) : std::string{"link closed"};
      auto who = name; // member_down erases the link `name` lives in
      return member_down(self, who, "link lost: " + reason);
    }
  }
}

void stop(node_self self) {
  auto& st = self->state;
  if (st.stopping) {
    return;
  }
  auto m = envelope(self);
  m.body = protocol::cluster_bye{};
  broadcast(self, m);
  st.stopping = true;
  // The endpoint drops whatever arrives from now on.
  st.off->closed = true;
  if (st.cfg.state_file.empty()) {
    return self->quit();
  }
  save(self, [self](bool) { self->quit(); });
}

node_actor::behavior_type node(node_self self, node_config cfg, node_deps deps,
                               std::shared_ptr<endpoint_switch> off) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.deps = std::move(deps);
  st.off = std::move(off);
  st.incarnation = std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32);
  st.members = member_table{
      member_table::timing{st.cfg.suspect_after, st.cfg.down_after, std::chrono::minutes{10}}};
  st.dials =
      dial_table{dial_table::settings{st.cfg.reconnect_min, st.cfg.reconnect_max,
                                      st.cfg.max_dial_failures, st.cfg.max_learned_addresses}};
  st.syncs = sync_limits{st.cfg.full_sync_interval};
  st.peer_interface = self->system().message_types(caf::detail::type_list<peer_actor>{});
  st.frames_seen = frame_refusals();
  for (auto& s : st.cfg.seeds) {
    std::string why;
    if (s != st.cfg.cluster_address && !st.dials.add_seed(s, why)) {
      logs::cluster().warn("ignoring seed: {}", why);
    }
  }
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  self->send(st.deps.registry, subscribe_atom_v,
             caf::actor_cast<actors::replication_listener>(self));
  publish_status(self);
  start_prefix_gossip(self);
  if (st.cfg.networked) {
    self->send(self, tick_atom_v);
  }
  // Nothing outside this process can reach this actor (it is never published, and named only
  // in messages to this node's policies: it speaks to peers as its endpoint): what the
  // handlers below receive comes from this node.
  return {
      [self](gossip_atom, peer_actor& sender, std::string& bytes) {
        cpu_meter busy{self->state.cpu_ns};
        on_gossip(self, sender, bytes);
      },
      [self](endpoint_atom, peer_actor& endpoint) { self->state.endpoint = std::move(endpoint); },
      [self](publish_atom, actors::fleet_ptr& fleet) {
        auto& st = self->state;
        cpu_meter busy{st.cpu_ns};
        auto digest_changed = !st.fleet || st.fleet->digest != fleet->digest;
        st.fleet = std::move(fleet);
        apply_all_remote_loads(self);
        if (digest_changed) {
          publish_status(self);
        }
        maybe_persist(self);
      },
      [self](changes_atom, actors::record_batch& records) -> caf::result<std::string> {
        cpu_meter busy{self->state.cpu_ns};
        if (self->state.stopping) {
          return actors::make_caf_error(protocol::error_code::service_unavailable,
                                        "the node is shutting down");
        }
        broadcast_records(self, records);
        return confirm_write(self, records);
      },
      [self](tick_atom) {
        cpu_meter busy{self->state.cpu_ns};
        tick(self);
      },
      [self](prefix_atom) {
        cpu_meter busy{self->state.cpu_ns};
        on_fresh_prefixes(self);
      },
      [self](placement_atom,
             protocol::placement_ask& ask) -> caf::result<protocol::placement_answer> {
        cpu_meter busy{self->state.cpu_ns};
        return delegate_placement(self, ask);
      },
      [self](persist_atom) {
        save(self, [self](bool) {
          self->state.persist_pending = false;
          maybe_persist(self); // changed again meanwhile
        });
      },
      [self](stop_atom) { stop(self); },
      [self](inspect_atom, mailbox_atom) -> std::uint64_t { return self->mailbox().size(); },
      [self](inspect_atom) { return inspect_state(self).dump(); },
  };
}

} // namespace

node_handles make_node(caf::actor_system& sys, node_config cfg, node_deps deps) {
  auto off = std::make_shared<endpoint_switch>();
  auto max_bytes = cfg.max_message_bytes;
  auto refusals = deps.refusals;
  auto n = sys.spawn(node, std::move(cfg), std::move(deps), off);
  auto endpoint = make_peer_endpoint(sys, n, max_bytes, std::move(refusals), std::move(off));
  // The node's first message: it speaks to peers as this endpoint.
  caf::anon_send(n, endpoint_atom_v, endpoint);
  return {n, endpoint};
}

} // namespace troupe::cluster
