// How two nodes whose views of their link differ find each other again. A peer is a member from
// its hello on its own link (node_receive.cpp), and each side greets a link once. When one side
// lost the link (a stall past the timeout, or CAF closed the connection a hello came on: two
// connections of one pair) while the other kept its own, the first refused every message of the
// second as "before its hello on this link", and the second, whose link never broke, never
// greeted again: the pair stayed apart for good (seen at 5 and 20 nodes on a loaded machine).
//
// The hello's `again` asks the receiver for its hello even if it counts the link as verified.
// This node asks only
//   - an actor it dialed itself (at a seed or an announced member address; over TLS the peer
//     proved a certificate of the cluster CA) that has not said hello on that link: its hello
//     on the dial, then again every `suspect_after` until the peer's comes;
//   - over TLS, the very actor and incarnation of a member whose verified link it lost, when
//     that actor speaks again (once per keepalive).
// It greets again only on its verified link of a member that asked. Anyone else (a stranger, a
// peer naming a member from another actor or incarnation, any sender over a plain link) gets
// nothing: its message is refused and counted as before.

#include "cluster/node_state.hpp"
#include "services/logs.hpp"

namespace troupe::cluster {

namespace {

constexpr std::size_t max_lost_links = 4096; ///< Bounded: names only a member ever had.

bool refused_peer(const node_state& st, const caf::actor_addr& a) {
  if (st.own_name_clashes.count(a)) {
    return true;
  }
  for (auto& [name, d] : st.duplicates) {
    if (d.actor.address() == a) {
      return true;
    }
  }
  return false;
}

} // namespace

void await_hello(node_self self, const peer_actor& peer) {
  auto& st = self->state;
  st.unanswered[peer.address()] = {peer, steady_now(self)};
  ++st.greetings_asked;
}

void ask_unanswered(node_self self) {
  auto& st = self->state;
  auto now = steady_now(self);
  for (auto it = st.unanswered.begin(); it != st.unanswered.end();) {
    auto& [actor, since] = it->second;
    if (!st.dialed.count(it->first)) {
      it = st.unanswered.erase(it); // the dial's link is gone
      continue;
    }
    if (now - since >= st.cfg.suspect_after && !refused_peer(st, it->first)) {
      logs::cluster().debug("no hello yet from the actor dialed at {}: asking again",
                            st.dialed[it->first]);
      since = now;
      ++st.greetings_asked;
      send_hello(self, actor, true);
    }
    ++it;
  }
}

void link_verified(node_self self, const std::string& name, const peer_actor& sender) {
  auto& st = self->state;
  st.unanswered.erase(sender.address());
  st.lost_links.erase(name);
}

void link_lost(node_self self, const std::string& name, const caf::actor_addr& actor) {
  auto& st = self->state;
  auto* m = st.members.find(name);
  if (!st.cfg.tls || !m || m->incarnation == 0) {
    return; // a plain link proves nothing about who speaks on it later
  }
  if (st.lost_links.size() >= max_lost_links && !st.lost_links.count(name)) {
    st.lost_links.erase(st.lost_links.begin());
  }
  st.lost_links[name] = {actor, m->incarnation, {}};
}

void ask_lost_member(node_self self, const peer_actor& sender,
                     const protocol::cluster_message& msg) {
  auto& st = self->state;
  auto it = st.lost_links.find(msg.from);
  if (!st.cfg.tls || it == st.lost_links.end() || it->second.actor != sender.address() ||
      it->second.incarnation != msg.incarnation || st.links.count(msg.from)) {
    return;
  }
  auto now = steady_now(self);
  if (it->second.asked != caf::actor_clock::time_point{} &&
      now - it->second.asked < st.cfg.keepalive) {
    return;
  }
  it->second.asked = now;
  ++st.greetings_asked;
  logs::cluster().info("member {} speaks on the link this node lost: asking it to greet again",
                       msg.from);
  send_hello(self, sender, true);
}

void greet_again(node_self self, const std::string& name, const peer_actor& sender) {
  auto& st = self->state;
  auto now = steady_now(self);
  auto [it, fresh] = st.regreeted.try_emplace(name, now);
  if (!fresh && now - it->second < st.cfg.keepalive) {
    return;
  }
  it->second = now;
  ++st.regreets;
  logs::cluster().info("member {} asks for this node's hello again: greeting it again", name);
  st.greeted.erase(sender.address());
  greet(self, name, sender);
}

} // namespace troupe::cluster
