// When a write of this node is durable, so that `POST /workers` and `DELETE` answer only then
// (a 202 is a promise): a linked peer that confirms writes said it holds the records (it acks
// them once merged), or, with no such peer linked, the state file holds them (written,
// fsync'd, renamed, its directory fsync'd). A node that keeps no state file and has no peer
// answers at once: nothing it does could outlive it. A write no peer confirmed within
// `ack_timeout` falls back on the state file, or is answered with an error (it stays
// registered here and reaches the peers by anti-entropy if this node lives).

#include "actors/errors.hpp"
#include "cluster/node_state.hpp"
#include "cluster/state_file.hpp"
#include "services/logs.hpp"

namespace troupe::cluster {

namespace {

/// Linked members that confirm writes.
std::size_t confirming_links(const node_state& st) {
  std::size_t n = 0;
  for (auto& [name, link] : st.links) {
    auto it = st.members.members().find(name);
    if (it != st.members.members().end() && it->second.acks &&
        it->second.state != member_state::down) {
      ++n;
    }
  }
  return n;
}

void start_waiters_save(node_self self) {
  auto& st = self->state;
  if (st.saving_for_waiters || st.save_waiters.empty()) {
    return;
  }
  st.saving_for_waiters = true;
  auto waiting = std::move(st.save_waiters);
  st.save_waiters.clear();
  save(self, [self, waiting](bool ok) mutable {
    auto& st = self->state;
    for (auto& rp : waiting) {
      if (ok) {
        ++st.writes_confirmed_by_file;
        rp.deliver(std::string{"the state file"});
      } else {
        ++st.writes_unconfirmed;
        rp.deliver(actors::make_caf_error(
            protocol::error_code::service_unavailable,
            "the change is made on this node, but the state file cannot be written (" +
                st.last_save_error + "): it would not survive this node"));
      }
    }
    st.saving_for_waiters = false;
    start_waiters_save(self); // writes that came meanwhile
  });
}

/// `rp` is answered after the next save of the state file.
void after_next_save(node_self self, caf::typed_response_promise<std::string> rp) {
  self->state.save_waiters.push_back(std::move(rp));
  start_waiters_save(self);
}

} // namespace

caf::result<std::string> confirm_write(node_self self, const actors::record_batch& records) {
  auto& st = self->state;
  if (confirming_links(st) > 0) {
    node_state::unconfirmed w;
    for (auto& r : records) {
      w.records.emplace_back(r.id, r.version);
    }
    w.promise = self->make_response_promise<std::string>();
    w.deadline = steady_now(self) + st.cfg.ack_timeout;
    auto rp = w.promise;
    st.unconfirmed_writes.push_back(std::move(w));
    return rp;
  }
  if (!st.cfg.state_file.empty()) {
    auto rp = self->make_response_promise<std::string>();
    after_next_save(self, rp);
    return rp;
  }
  return std::string{"this node only (no peer, no state file)"};
}

void on_ack(node_self self, const std::string& from, const protocol::cluster_ack& a) {
  auto& st = self->state;
  std::set<std::pair<std::string, std::uint64_t>> held(a.records.begin(), a.records.end());
  auto& ws = st.unconfirmed_writes;
  for (auto it = ws.begin(); it != ws.end();) {
    bool all = std::all_of(it->records.begin(), it->records.end(),
                           [&](auto& r) { return held.count(r) > 0; });
    if (!all) {
      ++it;
      continue;
    }
    ++st.writes_confirmed_by_peer;
    it->promise.deliver("member " + from);
    it = ws.erase(it);
  }
}

void expire_unconfirmed(node_self self) {
  auto& st = self->state;
  if (st.unconfirmed_writes.empty()) {
    return;
  }
  auto now = steady_now(self);
  bool nobody = confirming_links(st) == 0;
  auto& ws = st.unconfirmed_writes;
  for (auto it = ws.begin(); it != ws.end();) {
    if (!nobody && now < it->deadline) {
      ++it;
      continue;
    }
    auto why = nobody ? std::string{"the peers it was sent to are gone"}
                      : "no peer confirmed it within " +
                            std::to_string(st.cfg.ack_timeout.count()) + " ms";
    if (!st.cfg.state_file.empty()) {
      logs::cluster().warn("a write of worker {}: {}; saved to the state file instead",
                           it->records.empty() ? "?" : it->records.front().first, why);
      after_next_save(self, std::move(it->promise));
    } else {
      ++st.writes_unconfirmed;
      it->promise.deliver(actors::make_caf_error(
          protocol::error_code::service_unavailable,
          "the change is made on this node, but " + why +
              " and there is no --state-file: it may be lost if this node fails now"));
    }
    it = ws.erase(it);
  }
}

void save(node_self self, std::function<void(bool)> then) {
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
            bool ok = save_state(st.cfg.state_file, st.cfg.name, records, why);
            if (ok) {
              ++st.saves;
              st.persisted_digest = digest;
              st.persisted_once = true;
              st.last_save_error.clear();
            } else if (why != st.last_save_error) {
              logs::cluster().error("{}", why);
              st.last_save_error = why;
            }
            then(ok);
          },
          [then](caf::error&) { then(false); });
}

void maybe_persist(node_self self) {
  auto& st = self->state;
  if (st.cfg.state_file.empty() || st.persist_pending || !st.fleet ||
      (st.persisted_once && st.fleet->digest == st.persisted_digest)) {
    return;
  }
  st.persist_pending = true;
  self->delayed_send(self, st.cfg.persist_delay, persist_atom_v);
}

} // namespace troupe::cluster
