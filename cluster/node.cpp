#include "cluster/node.hpp"

#include "cluster/address.hpp"
#include "cluster/membership.hpp"
#include "cluster/state_file.hpp"

#include <caf/io/middleman.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <spdlog/spdlog.h>

namespace troupe::cluster {

namespace {

using steady = std::chrono::steady_clock;
using wall = std::chrono::system_clock;
using protocol::cluster_message;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(wall::now().time_since_epoch())
      .count();
}

/// An address this node dials: a seed, or a member's announced cluster address.
struct dial {
  endpoint where;
  bool seed = false;
  bool self = false;                 ///< It turned out to be this node: never dialed again.
  bool connecting = false;           ///< An attempt is in flight.
  caf::actor_addr link;              ///< The peer the last attempt reached (while it lives).
  steady::time_point next_attempt{}; ///< Not before.
  std::chrono::milliseconds backoff{0};
  unsigned failures = 0;
  std::string last_error;
};

struct node_state {
  static inline const char* name = "cluster_node";

  node_config cfg;
  node_deps deps;
  std::uint64_t incarnation = 0;
  member_table members{member_table::timing{}};
  std::map<std::string, peer_actor> links; ///< Current link of each member, by name.
  std::set<caf::actor_addr> greeted;       ///< Links this node sent hello + state on.
  std::map<caf::actor_addr, steady::time_point> last_full_sync; ///< Per link.
  std::map<std::string, unsigned> digest_mismatches;            ///< Consecutive, per member.
  std::map<std::string, dial> dials;                            ///< By address text.
  std::set<std::string> peer_interface; ///< What a peer's cluster port must publish.
  actors::fleet_ptr fleet;
  std::uint64_t seq = 0;
  std::map<std::string, int> last_sent_loads;
  steady::time_point last_report{};
  bool persist_pending = false;
  std::uint64_t persisted_digest = 0;
  bool persisted_once = false;
  bool stopping = false;

  // -- counters (inspect) --
  std::uint64_t messages_in = 0;
  std::uint64_t messages_out = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t decode_errors = 0;
  std::string last_decode_error;
  std::uint64_t full_syncs_sent = 0;
  std::uint64_t full_syncs_received = 0;
  std::uint64_t records_received = 0;
  std::uint64_t saves = 0;
  std::string last_save_error;
};

using self_ptr = node_actor::stateful_pointer<node_state>;

/// True when the current message came from another node: only `gossip_atom` may.
bool from_peer(self_ptr self) {
  auto& s = self->current_sender();
  return s && s->node() != self->node();
}

// -- sending --

cluster_message envelope(self_ptr self) {
  cluster_message m;
  m.from = self->state.cfg.name;
  m.incarnation = self->state.incarnation;
  m.sent_ms = now_ms();
  return m;
}

void send_to(self_ptr self, const peer_actor& to, const cluster_message& m) {
  auto bytes = protocol::encode(m);
  auto& st = self->state;
  ++st.messages_out;
  st.bytes_out += bytes.size();
  self->send(to, gossip_atom_v, std::move(bytes));
}

void broadcast(self_ptr self, const cluster_message& m) {
  auto& st = self->state;
  if (st.links.empty()) {
    return;
  }
  // Encoded once for every peer.
  auto bytes = protocol::encode(m);
  for (auto& [name, link] : st.links) {
    ++st.messages_out;
    st.bytes_out += bytes.size();
    self->send(link, gossip_atom_v, bytes);
  }
}

void send_hello(self_ptr self, const peer_actor& to) {
  auto& st = self->state;
  protocol::cluster_hello h;
  h.api_address = st.cfg.api_address;
  h.cluster_address = st.cfg.cluster_address;
  for (auto& [name, m] : st.members.members()) {
    if (!m.cluster_address.empty() && m.state != member_state::down) {
      h.peers.push_back(m.cluster_address);
    }
  }
  auto m = envelope(self);
  m.body = std::move(h);
  send_to(self, to, m);
}

/// Sends the registry's whole state to `to`.
void send_full_state(self_ptr self, const peer_actor& to) {
  auto& st = self->state;
  st.last_full_sync[to.address()] = steady::now();
  self->request(st.deps.registry, caf::infinite, records_atom_v)
      .then(
          [self, to](actors::record_batch& records) {
            ++self->state.full_syncs_sent;
            auto m = envelope(self);
            m.body = protocol::registry_sync{true, std::move(records)};
            send_to(self, to, m);
          },
          [](caf::error&) {
            // The registry is gone: the node is shutting down.
          });
}

void greet(self_ptr self, const peer_actor& to) {
  auto& st = self->state;
  if (!st.greeted.insert(to.address()).second) {
    return;
  }
  send_hello(self, to);
  send_full_state(self, to);
}

// -- what the node shows --

void publish_status(self_ptr self) {
  auto& st = self->state;
  auto status = std::make_shared<services::cluster_status>();
  status->enabled = st.cfg.networked;
  status->self = st.cfg.name;
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
  st.deps.view->set(std::move(status));
  if (st.deps.metrics && st.cfg.networked) {
    st.deps.metrics->set_cluster_members(1 + st.members.count(member_state::up),
                                         st.members.count(member_state::suspect),
                                         st.members.count(member_state::down));
  }
}

/// Writes the peers' summed load into each worker's live state.
void apply_remote_loads(self_ptr self) {
  auto& st = self->state;
  if (!st.fleet) {
    return;
  }
  auto sums = st.members.remote_loads();
  for (auto& w : st.fleet->workers) {
    auto it = sums.find(w->id);
    w->live->remote_in_flight.store(it == sums.end() ? 0 : it->second, std::memory_order_relaxed);
  }
}

void member_down(self_ptr self, const std::string& name, std::string reason) {
  auto& st = self->state;
  if (st.members.down(name, reason, wall::now())) {
    spdlog::warn("cluster: member {} is down ({})", name, reason);
  }
  if (auto it = st.links.find(name); it != st.links.end()) {
    st.greeted.erase(it->second.address());
    st.last_full_sync.erase(it->second.address());
    st.links.erase(it);
  }
  apply_remote_loads(self);
  publish_status(self);
}

// -- dialing --

void schedule_retry(dial& d, const node_config& cfg) {
  d.connecting = false;
  d.link = caf::actor_addr{};
  d.backoff =
      d.backoff.count() == 0 ? cfg.reconnect_min : std::min(d.backoff * 2, cfg.reconnect_max);
  d.next_attempt = steady::now() + d.backoff;
}

/// Adds an address to dial (a member's announced cluster address).
void learn_address(self_ptr self, const std::string& address) {
  auto& st = self->state;
  if (address.empty() || address == st.cfg.cluster_address || st.dials.count(address)) {
    return;
  }
  std::string why;
  auto e = parse_endpoint(address, why);
  if (!e) {
    spdlog::warn("cluster: ignoring a member address: {}", why);
    return;
  }
  dial d;
  d.where = *e;
  st.dials.emplace(address, std::move(d));
}

/// True when the member at `address` is linked already (it dialed us, or we it).
bool linked(node_state& st, const std::string& address, const dial& d) {
  for (auto& [name, link] : st.links) {
    if (d.link && link.address() == d.link) {
      return true;
    }
    auto* m = st.members.find(name);
    if (m && m->cluster_address == address && m->state != member_state::down) {
      return true;
    }
  }
  return false;
}

void try_dial(self_ptr self, const std::string& address) {
  auto& st = self->state;
  auto& d = st.dials.at(address);
  d.connecting = true;
  auto mm = self->system().middleman().actor_handle();
  self->request(mm, st.cfg.connect_timeout, caf::connect_atom_v, d.where.host, d.where.port)
      .then(
          [self, address](caf::node_id& nid, caf::strong_actor_ptr& ptr,
                          std::set<std::string>& ifs) {
            auto& st = self->state;
            auto it = st.dials.find(address);
            if (it == st.dials.end() || st.stopping) {
              return;
            }
            auto& d = it->second;
            if (!ptr) {
              d.last_error = "no actor published there";
            } else if (nid == self->node()) {
              spdlog::info("cluster: {} is this node: not dialed again", address);
              d.self = true;
              d.connecting = false;
              return;
            } else if (ifs != st.peer_interface) {
              d.last_error = "the actor published there is not a troupe cluster node";
            } else {
              auto peer = caf::actor_cast<peer_actor>(ptr);
              d.connecting = false;
              d.failures = 0;
              d.backoff = std::chrono::milliseconds{0};
              d.last_error.clear();
              d.link = peer.address();
              self->monitor(peer);
              spdlog::info("cluster: linked to {}", address);
              greet(self, peer);
              return;
            }
            spdlog::warn("cluster: cannot link to {}: {}", address, d.last_error);
            ++d.failures;
            schedule_retry(d, st.cfg);
          },
          [self, address](caf::error& e) {
            auto& st = self->state;
            auto it = st.dials.find(address);
            if (it == st.dials.end()) {
              return;
            }
            auto& d = it->second;
            d.last_error = self->system().render(e);
            // The first failure says so; the retries that follow speak at debug level.
            if (d.failures++ == 0) {
              spdlog::info("cluster: cannot reach {} yet ({}); retrying", address, d.last_error);
            } else {
              spdlog::debug("cluster: cannot reach {} ({})", address, d.last_error);
            }
            schedule_retry(d, st.cfg);
          });
}

void dial_all(self_ptr self) {
  auto& st = self->state;
  auto now = steady::now();
  for (auto& [address, d] : st.dials) {
    if (d.self || d.connecting || now < d.next_attempt || linked(st, address, d)) {
      continue;
    }
    try_dial(self, address);
  }
}

// -- receiving --

void on_hello(self_ptr self, const std::string& from, protocol::cluster_hello& h) {
  auto& st = self->state;
  if (auto* m = st.members.find(from)) {
    m->api_address = h.api_address;
    if (!h.cluster_address.empty()) {
      m->cluster_address = h.cluster_address;
    }
  }
  learn_address(self, h.cluster_address);
  for (auto& p : h.peers) {
    learn_address(self, p);
  }
}

void on_sync(self_ptr self, protocol::registry_sync& s) {
  auto& st = self->state;
  st.records_received += s.records.size();
  if (s.full) {
    ++st.full_syncs_received;
  } else if (st.deps.metrics) {
    // A write on its origin node to its arrival here (wall clocks: assumes synchronized ones).
    auto now = now_ms();
    for (auto& r : s.records) {
      if (r.stamp_ms > 0) {
        auto delay = std::max<std::int64_t>(0, now - r.stamp_ms);
        st.deps.metrics->on_cluster_propagation(std::chrono::duration<double>(delay / 1000.0));
      }
    }
  }
  if (!s.records.empty()) {
    self->send(st.deps.registry, merge_atom_v, actors::record_batch(std::move(s.records)));
  }
}

void on_load(self_ptr self, const std::string& from, const peer_actor& link,
             const protocol::load_report& r) {
  auto& st = self->state;
  if (st.members.report(from, r)) {
    apply_remote_loads(self);
  }
  // Anti-entropy: registries that still differ after two reports exchange their whole state
  // (a delta lost to a link that dropped, a node that was away).
  if (!st.fleet || r.registry_digest == st.fleet->digest) {
    st.digest_mismatches[from] = 0;
    return;
  }
  auto& n = st.digest_mismatches[from];
  auto last = st.last_full_sync.find(link.address());
  auto quiet =
      last == st.last_full_sync.end() || steady::now() - last->second >= std::chrono::seconds{1};
  if (++n >= 2 && quiet) {
    n = 0;
    spdlog::debug("cluster: registry of {} differs from ours: sending ours", from);
    send_full_state(self, link);
  }
}

void on_gossip(self_ptr self, std::string& bytes) {
  auto& st = self->state;
  if (st.stopping) {
    return;
  }
  ++st.messages_in;
  st.bytes_in += bytes.size();
  std::string why;
  auto msg = protocol::decode_message(bytes, why);
  if (!msg) {
    ++st.decode_errors;
    st.last_decode_error = why;
    if (st.decode_errors <= 5 || st.decode_errors % 100 == 0) {
      spdlog::warn("cluster: dropped a message ({} so far): {}", st.decode_errors, why);
    }
    return;
  }
  auto sender = caf::actor_cast<peer_actor>(self->current_sender());
  if (!sender) {
    return;
  }
  if (msg->from == st.cfg.name) {
    spdlog::error("cluster: a peer calls itself {}, as this node does: give each node its own "
                  "--node-name",
                  msg->from);
    return;
  }
  if (std::holds_alternative<protocol::cluster_bye>(msg->body)) {
    if (auto it = st.links.find(msg->from); it != st.links.end() && it->second == sender) {
      member_down(self, msg->from, "left the cluster");
    }
    return;
  }
  auto heard = st.members.heard(msg->from, msg->incarnation, steady::now(), wall::now());
  if (heard == member_table::heard_result::joined) {
    spdlog::info("cluster: member {} is up", msg->from);
  } else if (heard == member_table::heard_result::restarted) {
    spdlog::info("cluster: member {} restarted", msg->from);
  }
  auto& link = st.links[msg->from];
  if (link != sender) {
    if (link) {
      st.greeted.erase(link.address());
    }
    link = sender;
    self->monitor(sender);
  }
  greet(self, sender);
  bool status_changed = heard != member_table::heard_result::known;
  std::visit(
      [&](auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, protocol::cluster_hello>) {
          on_hello(self, msg->from, body);
          status_changed = true;
        } else if constexpr (std::is_same_v<T, protocol::registry_sync>) {
          on_sync(self, body);
        } else if constexpr (std::is_same_v<T, protocol::load_report>) {
          on_load(self, msg->from, sender, body);
          status_changed = true;
        }
      },
      msg->body);
  if (heard != member_table::heard_result::known) {
    apply_remote_loads(self);
  }
  if (status_changed) {
    publish_status(self);
  }
}

// -- periodic work --

void report_load(self_ptr self) {
  auto& st = self->state;
  if (!st.fleet) {
    return;
  }
  std::map<std::string, int> loads;
  for (auto& w : st.fleet->workers) {
    if (auto n = w->live->local_load(); n > 0) {
      loads[w->id] = n;
    }
  }
  auto now = steady::now();
  if (loads == st.last_sent_loads && now - st.last_report < st.cfg.keepalive) {
    return;
  }
  protocol::load_report r;
  r.seq = ++st.seq;
  r.loads.assign(loads.begin(), loads.end());
  r.registry_digest = st.fleet->digest;
  r.registry_version = st.fleet->version;
  r.shared_version = st.fleet->shared_version;
  r.workers = static_cast<std::uint32_t>(st.fleet->workers.size());
  auto m = envelope(self);
  m.body = std::move(r);
  broadcast(self, m);
  st.last_sent_loads = std::move(loads);
  st.last_report = now;
}

void tick(self_ptr self) {
  auto& st = self->state;
  if (st.stopping) {
    return;
  }
  report_load(self);
  auto changed = st.members.expire(steady::now(), wall::now());
  for (auto& name : changed) {
    auto* m = st.members.find(name);
    if (!m) {
      continue; // forgotten
    }
    if (m->state == member_state::down) {
      spdlog::warn("cluster: member {} is down ({})", name, m->reason);
    } else {
      spdlog::info("cluster: member {} is {} (silent)", name, to_string(m->state));
    }
  }
  if (!changed.empty()) {
    apply_remote_loads(self);
    publish_status(self);
  }
  dial_all(self);
  self->delayed_send(self, st.cfg.gossip_interval, tick_atom_v);
}

// -- the state file --

void save(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  self->request(st.deps.registry, caf::infinite, records_atom_v)
      .then(
          [self, then](actors::record_batch& records) {
            auto& st = self->state;
            std::uint64_t digest = 0;
            for (auto& r : records) {
              digest ^= protocol::record_hash(r);
            }
            std::string why;
            // A small file written in one go: kept on this thread rather than handed off.
            if (save_state(st.cfg.state_file, st.cfg.name, records, why)) {
              ++st.saves;
              st.persisted_digest = digest;
              st.persisted_once = true;
              st.last_save_error.clear();
            } else if (why != st.last_save_error) {
              spdlog::error("cluster: {}", why);
              st.last_save_error = why;
            }
            then();
          },
          [then](caf::error&) { then(); });
}

void maybe_persist(self_ptr self) {
  auto& st = self->state;
  if (st.cfg.state_file.empty() || st.persist_pending || !st.fleet ||
      (st.persisted_once && st.fleet->digest == st.persisted_digest)) {
    return;
  }
  st.persist_pending = true;
  self->delayed_send(self, st.cfg.persist_delay, persist_atom_v);
}

nlohmann::json inspect_state(self_ptr self) {
  auto& st = self->state;
  auto dials = nlohmann::json::array();
  for (auto& [address, d] : st.dials) {
    dials.push_back({{"address", address},
                     {"seed", d.seed},
                     {"self", d.self},
                     {"connecting", d.connecting},
                     {"linked", linked(st, address, d)},
                     {"failures", d.failures},
                     {"last_error", d.last_error}});
  }
  return {{"kind", "cluster_node"},
          {"name", "cluster_node"},
          {"id", self->id()},
          {"node", st.cfg.name},
          {"networked", st.cfg.networked},
          {"cluster_address", st.cfg.cluster_address},
          {"members_up", st.members.count(member_state::up)},
          {"members_suspect", st.members.count(member_state::suspect)},
          {"members_down", st.members.count(member_state::down)},
          {"links", st.links.size()},
          {"dials", std::move(dials)},
          {"messages_in", st.messages_in},
          {"messages_out", st.messages_out},
          {"bytes_in", st.bytes_in},
          {"bytes_out", st.bytes_out},
          {"decode_errors", st.decode_errors},
          {"last_decode_error", st.last_decode_error},
          {"full_syncs_sent", st.full_syncs_sent},
          {"full_syncs_received", st.full_syncs_received},
          {"records_received", st.records_received},
          {"state_file", st.cfg.state_file},
          {"saves", st.saves},
          {"last_save_error", st.last_save_error},
          {"mailbox_size", self->mailbox().size()}};
}

node_actor::behavior_type node(self_ptr self, node_config cfg, node_deps deps) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.deps = std::move(deps);
  st.incarnation = std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32);
  st.members = member_table{
      member_table::timing{st.cfg.suspect_after, st.cfg.down_after, std::chrono::minutes{10}}};
  st.peer_interface = self->system().message_types(caf::detail::type_list<peer_actor>{});
  for (auto& s : st.cfg.seeds) {
    std::string why;
    if (auto e = parse_endpoint(s, why); e && s != st.cfg.cluster_address) {
      dial d;
      d.where = *e;
      d.seed = true;
      st.dials.emplace(s, std::move(d));
    }
  }
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    for (auto& [address, d] : st.dials) {
      if (d.link && d.link == dm.source) {
        schedule_retry(d, st.cfg);
      }
    }
    for (auto& [name, link] : st.links) {
      if (link.address() == dm.source) {
        auto reason = dm.reason ? self->system().render(dm.reason) : std::string{"link closed"};
        return member_down(self, name, "link lost: " + reason);
      }
    }
  });
  self->send(st.deps.registry, subscribe_atom_v,
             caf::actor_cast<actors::replication_listener>(self));
  publish_status(self);
  if (st.cfg.networked) {
    self->send(self, tick_atom_v);
  }
  return {
      [self](gossip_atom, std::string& bytes) { on_gossip(self, bytes); },
      [self](publish_atom, actors::fleet_ptr& fleet) {
        if (from_peer(self)) {
          return;
        }
        auto& st = self->state;
        auto digest_changed = !st.fleet || st.fleet->digest != fleet->digest;
        st.fleet = std::move(fleet);
        apply_remote_loads(self);
        if (digest_changed) {
          publish_status(self);
        }
        maybe_persist(self);
      },
      [self](changes_atom, actors::record_batch& records) {
        if (from_peer(self) || self->state.stopping) {
          return;
        }
        auto m = envelope(self);
        m.body = protocol::registry_sync{false, std::move(records)};
        broadcast(self, m);
      },
      [self](tick_atom) {
        if (!from_peer(self)) {
          tick(self);
        }
      },
      [self](persist_atom) {
        if (from_peer(self)) {
          return;
        }
        save(self, [self] {
          self->state.persist_pending = false;
          maybe_persist(self); // changed again meanwhile
        });
      },
      [self](stop_atom) {
        if (from_peer(self)) {
          return;
        }
        auto& st = self->state;
        if (st.stopping) {
          return;
        }
        st.stopping = true;
        auto m = envelope(self);
        m.body = protocol::cluster_bye{};
        broadcast(self, m);
        if (st.cfg.state_file.empty()) {
          return self->quit();
        }
        save(self, [self] { self->quit(); });
      },
      [self](inspect_atom) { return inspect_state(self).dump(); },
  };
}

} // namespace

node_actor make_node(caf::actor_system& sys, node_config cfg, node_deps deps) {
  return sys.spawn(node, std::move(cfg), std::move(deps));
}

} // namespace troupe::cluster
