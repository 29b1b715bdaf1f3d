#include "actors/registry.hpp"

#include "actors/errors.hpp"
#include "actors/fleet_change_log.hpp"
#include "services/logs.hpp"

#include <algorithm>
#include <caf/typed_event_based_actor.hpp>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_map>

namespace troupe::actors {

namespace {

using protocol::worker_record;

struct registry_state {
  static inline const char* name = "registry";

  boost::asio::io_context* ioc = nullptr;
  std::shared_ptr<fleet_view> view;
  std::vector<fleet_listener> listeners;
  std::vector<replication_listener> replicators;
  worker_proxy_config cfg;
  inspector_actor inspector;
  std::string node;         ///< Signs this node's writes.
  worker_list workers;      ///< Live workers, registration order (so sorted by `seq`).
  fleet_index index;        ///< Candidates of `workers`, by (role, model).
  fleet_change_log changes; ///< Since the snapshot the listeners last heard of.
  /// `workers` by id and by url: a registration finds its worker without a scan of the fleet.
  std::unordered_map<std::string_view, const worker_entry*> by_id;
  std::unordered_multimap<std::string_view, const worker_entry*> by_url;
  bool snapshot_stale = false; ///< Writes the view does not show yet (see `publish`).
  /// Answers to writes held until the view shows them (see `answer_when_listed`).
  std::vector<std::function<void()>> held_answers;
  bool notify_pending = false; ///< A publish_atom to itself is on its way.
  std::uint64_t next_seq = 0;  ///< Registration order of the next new entry.
  /// Every registration ever seen, by id: live ones and tombstones.
  std::unordered_map<std::string, worker_record> records;
  /// Api keys this node was given itself (flags, `POST /workers`), by url: a record from a
  /// peer whose link carries no keys takes its key from here.
  std::unordered_map<std::string, std::string> local_keys;
  std::uint64_t clock = 0;   ///< Highest record version seen (hybrid logical clock).
  std::uint64_t digest = 0;  ///< XOR of the records' hashes.
  std::uint64_t version = 0; ///< Snapshot version.
};

using self_ptr = registry_actor::stateful_pointer<registry_state>;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Makes the fleet as it is now the current snapshot of the view.
void build_snapshot(registry_state& st) {
  st.snapshot_stale = false;
  // Delivered once the view is set (below): taken first, so an answer cannot see a new hold.
  auto answers = std::move(st.held_answers);
  st.held_answers.clear();
  auto deliver = [&answers] {
    for (auto& a : answers) {
      a();
    }
  };
  auto snap = std::make_shared<fleet_snapshot>();
  snap->version = ++st.version;
  snap->digest = st.digest;
  snap->shared_version = st.clock;
  // Entries are immutable and shared: a snapshot is the list of pointers and the index, whose
  // groups are shared with the previous snapshot where the write did not touch them.
  snap->workers = st.workers;
  snap->index = st.index;
  snap->change = st.changes.change();
  st.view->set(std::move(snap));
  deliver();
}

/// The answer `value` to the write being handled, sent once the view shows the write: a
/// client that was told its worker is registered finds it in `GET /workers`, also when the
/// snapshot waits for the end of a burst.
template <class T> caf::result<T> answer_when_listed(self_ptr self, T value) {
  auto& st = self->state;
  if (!st.snapshot_stale) {
    return value;
  }
  auto rp = self->make_response_promise<T>();
  st.held_answers.emplace_back([rp, value = std::move(value)]() mutable { rp.deliver(value); });
  return rp;
}

/// Publishes a write. The view changes at once (a worker is listed as soon as its
/// registration is answered) unless more writes wait in the mailbox: a burst (4,000 workers
/// registered by flag) builds one snapshot once it is done, not one per write, each a copy
/// of the list. The listeners hear of it once the writes already in the mailbox are done: one
/// message to each policy, not 4,000 snapshots queued in its mailbox.
void publish(self_ptr self) {
  auto& st = self->state;
  st.snapshot_stale = true;
  if (self->mailbox().size() == 0) {
    build_snapshot(st);
  }
  if (!st.notify_pending) {
    st.notify_pending = true;
    self->send(self, publish_atom_v);
  }
}

/// Sends the current snapshot to every listener.
void notify(self_ptr self) {
  auto& st = self->state;
  st.notify_pending = false;
  if (st.snapshot_stale) {
    build_snapshot(st);
  }
  auto ptr = st.view->get();
  st.changes.notified(ptr->version);
  for (auto& l : st.listeners) {
    self->send(l, publish_atom_v, ptr);
  }
  for (auto& r : st.replicators) {
    self->send(r, publish_atom_v, ptr);
  }
}

/// Hands `r` to the replication listeners; `answer` goes to the client once every listener
/// said the write is durable (at once without listeners), or their first error does.
/// Either way the answer also waits until the view shows the write (`answer_when_listed`).
template <class T> caf::result<T> replicate(self_ptr self, const worker_record& r, T answer) {
  auto& st = self->state;
  if (st.replicators.empty()) {
    return answer_when_listed(self, std::move(answer));
  }
  auto rp = self->make_response_promise<T>();
  auto left = std::make_shared<std::size_t>(st.replicators.size());
  for (auto& l : st.replicators) {
    self->request(l, caf::infinite, changes_atom_v, record_batch{r})
        .then(
            [self, rp, left, answer](std::string&) mutable {
              if (--*left != 0 || !rp.pending()) {
                return;
              }
              auto& st = self->state;
              if (!st.snapshot_stale) {
                rp.deliver(answer);
              } else {
                st.held_answers.emplace_back([rp, answer]() mutable {
                  if (rp.pending()) {
                    rp.deliver(answer);
                  }
                });
              }
            },
            [rp](caf::error& e) mutable {
              if (rp.pending()) {
                rp.deliver(std::move(e));
              }
            });
  }
  return rp;
}

/// Hands `r` to the replication listeners; nobody waits for it (a discovered model card).
void replicate(self_ptr self, const worker_record& r) {
  for (auto& l : self->state.replicators) {
    self->request(l, caf::infinite, changes_atom_v, record_batch{r})
        .then([](std::string&) {}, [](caf::error&) {});
  }
}

/// Stores `r` (the newest version of its id) and keeps the digest and clock in step.
void store(registry_state& st, const worker_record& r) {
  if (auto it = st.records.find(r.id); it != st.records.end()) {
    st.digest ^= protocol::record_hash(it->second);
    it->second = r;
  } else {
    st.records.emplace(r.id, r);
  }
  st.digest ^= protocol::record_hash(r);
  st.clock = std::max(st.clock, r.version);
}

/// A new version signed by this node.
void sign(registry_state& st, worker_record& r) {
  r.stamp_ms = now_ms();
  r.version = protocol::next_version(st.clock, r.stamp_ms);
  r.origin = st.node;
}

/// The position of the live worker `id` in `st.workers`, or `st.workers.size()` when none:
/// found by its registration order, O(log W).
std::size_t find_live(registry_state& st, std::string_view id) {
  auto known = st.by_id.find(id);
  if (known == st.by_id.end()) {
    return st.workers.size();
  }
  auto at = st.workers.find_seq(known->second->seq);
  return at < st.workers.size() && st.workers[at].get() == known->second ? at : st.workers.size();
}

/// A live worker registered with `url`, or nullptr.
const worker_entry* find_url(const registry_state& st, std::string_view url) {
  auto it = st.by_url.find(url);
  return it == st.by_url.end() ? nullptr : it->second;
}

void forget(registry_state& st, const worker_entry& w) {
  st.by_id.erase(w.id);
  auto [from, to] = st.by_url.equal_range(w.spec.url);
  for (auto it = from; it != to; ++it) {
    if (it->second == &w) {
      st.by_url.erase(it);
      break;
    }
  }
}

void remember(registry_state& st, const worker_entry& w) {
  st.by_id[w.id] = &w;
  st.by_url.emplace(w.spec.url, &w);
}

/// Adds a live worker (the index follows).
void append(registry_state& st, worker_entry_ptr w) {
  st.index = st.index.with(*w);
  remember(st, *w);
  st.changes.added(*w);
  st.workers.push_back(std::move(w));
}

/// Puts `next` (of the same `seq`) in the place of the worker at `at`.
void replace(registry_state& st, std::size_t at, worker_entry_ptr next) {
  auto& old = *st.workers[at];
  st.index = st.index.replaced(old, *next);
  forget(st, old);
  remember(st, *next);
  st.changes.removed(old);
  st.changes.added(*next);
  st.workers.set(at, std::move(next));
}

/// Takes the worker at `at` out of the fleet.
void erase(registry_state& st, std::size_t at) {
  auto& old = *st.workers[at];
  st.index = st.index.without(old);
  forget(st, old);
  st.changes.removed(old);
  st.workers.erase(at);
}

/// Spawns the proxy of `entry` (its spec, url and live state set).
void start_proxy(self_ptr self, worker_entry& entry, protocol::checked_spec checked) {
  auto& st = self->state;
  entry.live = std::make_shared<worker_live>();
  auto link = make_worker_proxy(self->system(), *st.ioc, entry.id, std::move(checked), entry.live,
                                caf::actor_cast<worker_listener>(self), st.cfg);
  entry.proxy = std::move(link.proxy);
  entry.channel = std::move(link.channel);
  register_with(st.inspector, "worker_proxy", "worker_proxy:" + entry.id, entry.proxy);
}

void stop_proxy(self_ptr self, const worker_entry& entry) {
  self->send(entry.proxy, drain_atom_v);
  deregister_from(self->state.inspector, entry.proxy);
}

/// Makes the live worker of `r` (a record that is not a tombstone) as the record says.
/// Returns false when the record's spec is invalid here (it is still stored: registries
/// converge on records even when one node cannot serve one).
bool apply_live(self_ptr self, const worker_record& r) {
  auto& st = self->state;
  auto it = find_live(st, r.id);
  bool live = it < st.workers.size();
  auto models =
      r.spec.model_id && r.models.empty() ? std::vector<std::string>{*r.spec.model_id} : r.models;
  if (live && st.workers[it]->spec == r.spec) {
    // Same worker, newer card: keep the proxy (and its health), take the models.
    auto next = std::make_shared<worker_entry>(*st.workers[it]);
    next->models = std::move(models);
    next->version = r.version;
    next->origin = r.origin;
    next->key_missing = r.key_withheld && r.spec.api_key.empty();
    replace(st, it, std::move(next));
    return true;
  }
  std::string why;
  auto checked = protocol::check(r.spec, why);
  if (!checked) {
    logs::registry().warn("worker {} from {}: invalid here ({}), not served", r.id, r.origin, why);
    if (live) {
      stop_proxy(self, *st.workers[it]);
      erase(st, it);
    }
    return false;
  }
  auto entry = std::make_shared<worker_entry>();
  entry->seq = ++st.next_seq;
  entry->id = r.id;
  entry->spec = checked->spec;
  entry->url = checked->url;
  entry->models = std::move(models);
  entry->registered_at = std::chrono::system_clock::time_point{
      std::chrono::milliseconds{r.registered_ms > 0 ? r.registered_ms : r.stamp_ms}};
  entry->version = r.version;
  entry->origin = r.origin;
  entry->key_missing = r.key_withheld && r.spec.api_key.empty();
  if (entry->key_missing) {
    logs::registry().warn(
        "worker {} {} from {} has an api key this node was not given (cluster links "
        "without TLS carry none): it is served without one until this node gets the "
        "key (POST /workers with the same url and the key, or the provider's key flag)",
        r.id, r.spec.url, r.origin);
  }
  start_proxy(self, *entry, std::move(*checked));
  if (live) {
    // The spec changed (registered again elsewhere): a new proxy, at the same place.
    stop_proxy(self, *st.workers[it]);
    entry->seq = st.workers[it]->seq;
    replace(st, it, entry);
  } else {
    if (auto* w = find_url(st, entry->spec.url)) {
      logs::registry().warn("worker {} and {} share the url {}", w->id, entry->id, entry->spec.url);
    }
    append(st, entry);
  }
  logs::registry().info("worker {} {} ({}) from {}", entry->id, entry->spec.url,
                        to_string(entry->spec.type), r.origin);
  return true;
}

/// A record whose sender left its api key out takes the key this node holds for the worker:
/// one it was given itself, or the one its own copy of the record has.
void fill_withheld_key(registry_state& st, worker_record& r) {
  if (!r.key_withheld || !r.spec.api_key.empty() || r.deleted) {
    return;
  }
  if (auto k = st.local_keys.find(r.spec.url); k != st.local_keys.end()) {
    r.spec.api_key = k->second;
  } else if (auto old = st.records.find(r.id); old != st.records.end() &&
                                               old->second.spec.url == r.spec.url &&
                                               !old->second.spec.api_key.empty()) {
    r.spec.api_key = old->second.spec.api_key;
  }
  if (!r.spec.api_key.empty()) {
    r.key_withheld = false; // complete here
  }
}

/// Merges records written elsewhere; returns those taken (newer than what this node held).
record_batch merge(self_ptr self, record_batch& batch) {
  auto& st = self->state;
  record_batch taken;
  for (auto& r : batch) {
    if (r.id.empty()) {
      continue;
    }
    fill_withheld_key(st, r);
    st.clock = std::max(st.clock, r.version);
    auto it = st.records.find(r.id);
    if (it != st.records.end() && !protocol::supersedes(r, it->second)) {
      continue;
    }
    if (r.deleted) {
      if (auto w = find_live(st, r.id); w < st.workers.size()) {
        stop_proxy(self, *st.workers[w]);
        logs::registry().info("removed worker {} {} (by {})", r.id, st.workers[w]->spec.url,
                              r.origin);
        erase(st, w);
      }
    } else {
      apply_live(self, r);
    }
    store(st, r);
    taken.push_back(r);
  }
  return taken;
}

/// Registering a worker this node serves without the api key its origin holds supplies the key
/// here (and nowhere else: the record keeps its version). Returns the worker's id when `spec`
/// is that worker with a key.
std::optional<std::string> supply_key(self_ptr self, const worker_entry& w,
                                      const protocol::worker_spec& spec) {
  auto& st = self->state;
  auto with_key = w.spec;
  with_key.api_key = spec.api_key;
  auto rec = st.records.find(w.id);
  if (!w.key_missing || spec.api_key.empty() || with_key != spec || rec == st.records.end()) {
    return std::nullopt;
  }
  // `w` is replaced (and freed) below: keep what is needed of it.
  auto id = w.id;
  auto url = w.spec.url;
  auto r = rec->second;
  r.spec.api_key = spec.api_key;
  r.key_withheld = false;
  apply_live(self, r);
  store(st, r);
  logs::registry().info("worker {} {}: this node has its api key now", id, url);
  publish(self);
  return id;
}

nlohmann::json inspect_state(self_ptr self) {
  auto& st = self->state;
  std::set<std::string> models;
  for (auto& w : st.workers) {
    models.insert(w->models.begin(), w->models.end());
  }
  auto tombstones = std::count_if(st.records.begin(), st.records.end(),
                                  [](auto& kv) { return kv.second.deleted; });
  auto keys_missing =
      std::count_if(st.workers.begin(), st.workers.end(), [](auto& w) { return w->key_missing; });
  char digest[20];
  std::snprintf(digest, sizeof(digest), "%016llx", static_cast<unsigned long long>(st.digest));
  return {{"kind", "registry"},
          {"name", "registry"},
          {"id", self->id()},
          {"node", st.node},
          {"workers", st.workers.size()},
          {"models", models.size()},
          {"version", st.version},
          {"records", st.records.size()},
          {"tombstones", tombstones},
          {"workers_without_their_key", keys_missing},
          {"digest", digest},
          {"clock", st.clock},
          {"listeners", st.listeners.size()},
          {"replicators", st.replicators.size()},
          {"mailbox_size", self->mailbox().size()}};
}

registry_actor::behavior_type registry(self_ptr self, boost::asio::io_context* ioc,
                                       std::shared_ptr<fleet_view> view,
                                       std::vector<fleet_listener> listeners,
                                       worker_proxy_config cfg, inspector_actor inspector,
                                       std::string node) {
  auto& st = self->state;
  st.inspector = std::move(inspector);
  st.ioc = ioc;
  st.view = std::move(view);
  st.listeners = std::move(listeners);
  st.cfg = std::move(cfg);
  st.node = std::move(node);
  return {
      [self](add_atom, protocol::worker_spec& spec) -> caf::result<std::string> {
        auto& st = self->state;
        std::string why;
        auto checked = protocol::check(std::move(spec), why);
        if (!checked) {
          return make_caf_error(protocol::error_code::bad_request, why);
        }
        if (!checked->spec.api_key.empty()) {
          st.local_keys[checked->spec.url] = checked->spec.api_key;
        }
        if (auto* w = find_url(st, checked->spec.url)) {
          if (auto id = supply_key(self, *w, checked->spec)) {
            return *id;
          }
          return make_caf_error(protocol::error_code::conflict, "worker " + checked->spec.url +
                                                                    " is already registered as " +
                                                                    w->id);
        }
        // The id follows the URL; a tombstone of the same URL is this worker coming back.
        auto id = worker_id_for(checked->spec.url);
        for (unsigned salt = 1;; ++salt) {
          auto it = st.records.find(id);
          if (it == st.records.end() || it->second.spec.url == checked->spec.url) {
            break;
          }
          id = worker_id_for(checked->spec.url, salt);
        }
        worker_record r;
        r.id = id;
        r.spec = checked->spec;
        if (checked->spec.model_id) {
          r.models = {*checked->spec.model_id};
        }
        sign(st, r);
        r.registered_ms = r.stamp_ms;
        auto entry = std::make_shared<worker_entry>();
        entry->seq = ++st.next_seq;
        entry->id = r.id;
        entry->spec = checked->spec;
        entry->url = checked->url;
        entry->models = r.models;
        entry->registered_at =
            std::chrono::system_clock::time_point{std::chrono::milliseconds{r.registered_ms}};
        entry->version = r.version;
        entry->origin = r.origin;
        start_proxy(self, *entry, std::move(*checked));
        logs::registry().info("registered worker {} {} ({})", entry->id, entry->spec.url,
                              to_string(entry->spec.type));
        append(st, entry);
        store(st, r);
        publish(self);
        return replicate(self, r, entry->id);
      },
      [self](remove_atom, const std::string& id) -> caf::result<bool> {
        auto& st = self->state;
        auto it = find_live(st, id);
        if (it == st.workers.size()) {
          return false;
        }
        stop_proxy(self, *st.workers[it]);
        logs::registry().info("removed worker {} {}", id, st.workers[it]->spec.url);
        worker_record r;
        if (auto rec = st.records.find(id); rec != st.records.end()) {
          r = rec->second;
        } else {
          r.id = id;
          r.spec = st.workers[it]->spec;
        }
        // A tombstone keeps the URL (a re-registration reuses the id) but no secret.
        r.deleted = true;
        r.models.clear();
        r.spec.api_key.clear();
        r.key_withheld = false;
        sign(st, r);
        erase(st, it);
        store(st, r);
        publish(self);
        return replicate(self, r, true);
      },
      [self](models_atom, const std::string& id, std::vector<std::string>& models) {
        auto& st = self->state;
        auto it = find_live(st, id);
        if (it == st.workers.size() || st.workers[it]->models == models) {
          return;
        }
        auto next = std::make_shared<worker_entry>(*st.workers[it]);
        next->models = std::move(models);
        auto rec = st.records.find(id);
        if (rec == st.records.end()) {
          replace(st, it, std::move(next));
          return publish(self);
        }
        // The model card is shared: the first node to read it tells the others.
        auto r = rec->second;
        r.models = next->models;
        sign(st, r);
        next->version = r.version;
        next->origin = r.origin;
        replace(st, it, std::move(next));
        store(st, r);
        publish(self);
        replicate(self, r);
      },
      [self](merge_atom, record_batch& batch) {
        auto taken = merge(self, batch);
        if (!taken.empty()) {
          publish(self);
        }
        return taken;
      },
      [self](records_atom) {
        auto& st = self->state;
        record_batch out;
        out.reserve(st.records.size());
        for (auto& [id, r] : st.records) {
          out.push_back(r);
        }
        std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.id < b.id; });
        return out;
      },
      [self](subscribe_atom, replication_listener& l) {
        if (self->state.snapshot_stale) {
          build_snapshot(self->state);
        }
        self->send(l, publish_atom_v, self->state.view->get());
        self->state.replicators.push_back(std::move(l));
      },
      [self](stop_atom) {
        for (auto& w : self->state.workers) {
          self->send(w->proxy, stop_atom_v);
        }
        self->state.workers.clear();
        self->state.by_id.clear();
        self->state.by_url.clear();
        self->state.index = {};
        self->state.changes.lose(); // listeners take the empty fleet in whole
        publish(self);
        notify(self);
        self->quit();
      },
      [self](publish_atom) { notify(self); },
      [self](inspect_atom, mailbox_atom) -> std::uint64_t { return self->mailbox().size(); },
      [self](inspect_atom) { return inspect_state(self).dump(); },
  };
}

} // namespace

std::string worker_id_for(std::string_view url, unsigned salt) {
  // FNV-1a of the URL (and the salt), folded to 32 bits.
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : url) {
    h = (h ^ c) * 1099511628211ull;
  }
  for (unsigned s = salt; s > 0; s >>= 8) {
    h = (h ^ (s & 0xffu)) * 1099511628211ull;
  }
  char buf[16];
  std::snprintf(buf, sizeof(buf), "w-%08x", static_cast<unsigned>((h >> 32) ^ (h & 0xffffffffu)));
  return buf;
}

registry_actor make_registry(caf::actor_system& sys, boost::asio::io_context& ioc,
                             std::shared_ptr<fleet_view> view,
                             std::vector<fleet_listener> listeners, worker_proxy_config cfg,
                             inspector_actor inspector, std::string node_name) {
  return sys.spawn(registry, &ioc, std::move(view), std::move(listeners), std::move(cfg),
                   std::move(inspector), std::move(node_name));
}

} // namespace troupe::actors
