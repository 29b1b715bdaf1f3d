#include "actors/policy.hpp"

#include "actors/errors.hpp"
#include "actors/fleet_change_log.hpp"
#include "actors/policies/strategy.hpp"

#include <algorithm>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace troupe::actors {

namespace {

struct policy_state {
  static inline const char* name = "policy";

  protocol::worker_type role = protocol::worker_type::regular;
  std::shared_ptr<strategy> strat; ///< Shared with the direct picker, when there is one.
  fleet_ptr fleet = std::make_shared<const fleet_snapshot>();
  std::shared_ptr<pick_counts> counts; ///< Shared with the direct picker, when there is one.
  bool fleet_seen = true; ///< The strategy has seen `fleet` (on_fleet runs before a pick).
  /// While it has not: the changes from the snapshot it saw to `fleet`, composed, when every
  /// snapshot since came with a change that follows the one before (`pending_known`).
  fleet_change_log pending;
  bool pending_known = false;
  prefix_sink fresh_sink;  ///< Told when picks placed new prefix blocks.
  bool fresh_told = false; ///< Told since the last take.
  // -- placement by owner (docs/cluster.md) --
  placement_setup placement; ///< The owners of prefix groups, and where to ask them.
  bool placement_on = false; ///< `--cluster-placement` is `first` or `all`.
  bool placement_all = false;
  std::chrono::milliseconds placement_timeout{10};
  std::uint64_t placement_delegated = 0; ///< Picks sent to their owner.
  std::uint64_t placement_failed = 0;    ///< Of those, decided here: no answer in time.
  std::uint64_t placement_own = 0;       ///< Picks of prefix groups this node owns.
  std::uint64_t placement_answered = 0;  ///< Asks of other nodes answered.
};

using self_ptr = policy_actor::stateful_pointer<policy_state>;

constexpr provider_set bit(protocol::provider_kind p) {
  return provider_bit(p);
}

/// The provider whose workers may serve a request speaking `wanted`'s API, among the workers
/// `present` that serve its model: any of them when they all belong to one provider; else
/// `wanted`'s, or the self-hosted ones when `wanted` has none there.
protocol::provider_kind eligible_provider(provider_set present, protocol::provider_kind wanted) {
  if (present & bit(wanted)) {
    return wanted;
  }
  return protocol::provider_kind::none;
}

/// Readable list of the providers in `present`, for errors.
std::string provider_names(provider_set present) {
  std::string out;
  for (auto p : {protocol::provider_kind::none, protocol::provider_kind::openai,
                 protocol::provider_kind::anthropic}) {
    if (present & bit(p)) {
      if (!out.empty()) {
        out += ", ";
      }
      out += p == protocol::provider_kind::none ? "self-hosted" : protocol::to_string(p);
    }
  }
  return out;
}

/// The workers of one pick: the group of the request's role and model, narrowed to the
/// provider that may serve it.
struct pick_list {
  const candidate_group* group = nullptr;
  const std::vector<const worker_entry*>* cands = nullptr;
  protocol::provider_kind only = protocol::provider_kind::none;
  bool mixed = false; ///< The model's workers belong to more than one provider.
};

pick_list candidates_of(const fleet_snapshot& fleet, const selection& sel) {
  pick_list out;
  out.group = fleet.index.find(sel.role, sel.model);
  if (!out.group) {
    return out;
  }
  // Providers of the model's workers, routable or not: a provider that is down must not hand
  // its requests (and credentials) to another.
  provider_set present = out.group->providers;
  out.mixed = (present & (present - 1)) != 0;
  if (out.mixed) {
    out.only = eligible_provider(present, sel.provider);
  } else {
    for (auto p : {protocol::provider_kind::none, protocol::provider_kind::openai,
                   protocol::provider_kind::anthropic}) {
      if (present & bit(p)) {
        out.only = p;
      }
    }
  }
  out.cands = &out.group->by_provider[static_cast<std::size_t>(out.only)];
  return out;
}

/// The 503 of a pick that found no eligible candidate.
caf::error none_eligible(const pick_list& l, const selection& sel) {
  if (l.mixed) {
    return make_caf_error(
        protocol::error_code::no_worker_available,
        "no healthy " +
            std::string(l.only == protocol::provider_kind::none ? "self-hosted"
                                                                : protocol::to_string(l.only)) +
            " worker is available for " +
            (sel.model.empty() ? std::string{"this request"} : "model '" + sel.model + "'") +
            " (it is served by " + provider_names(l.group->providers) +
            "; credentials never cross providers)");
  }
  auto what = sel.model.empty() ? std::string{"any model"} : "model '" + sel.model + "'";
  return make_caf_error(protocol::error_code::no_worker_available,
                        "no healthy " + std::string(protocol::to_string(sel.role)) +
                            " worker is available for " + what);
}

/// The error of a selection whose role and model have no workers at all.
caf::error no_group(const selection& sel) {
  if (!sel.model.empty()) {
    return make_caf_error(protocol::error_code::model_not_found,
                          "the model '" + sel.model + "' does not exist");
  }
  return make_caf_error(protocol::error_code::no_worker_available,
                        "no healthy " + std::string(protocol::to_string(sel.role)) +
                            " worker is available for any model");
}

/// The candidate `sel` prefers (a stored response's worker) when it may take the request.
std::size_t preferred(const std::vector<const worker_entry*>& cands, const selection& sel) {
  if (!sel.prefer.empty()) {
    // Rare: a look through the candidates' ids.
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (cands[i]->id == sel.prefer && eligible(*cands[i], sel)) {
        return i;
      }
    }
  }
  return strategy::npos;
}

caf::result<worker_entry_ptr> select_target(self_ptr self, const selection& sel,
                                            const pick_list& l);

/// How a selection is made: by the strategy, or by the owner of the prompt's prefix group when
/// placement by owner says so (`any`); by the strategy alone (`local`: the owner gave no
/// answer); on the owner's answer (`placed`, the strategy deciding when that worker may not
/// take the request).
enum class pick_how { any, local, placed };

caf::result<worker_entry_ptr> select(self_ptr self, const selection& sel,
                                     pick_how how = pick_how::any, std::string_view placed = {});

/// Tells the cluster node when picks placed prefix blocks the other nodes do not know: they
/// should hear of them before they route their next request (docs/cluster.md).
void tell_fresh(self_ptr self) {
  auto& st = self->state;
  if (st.fresh_sink && !st.fresh_told && st.strat->prefixes_fresh()) {
    st.fresh_told = true;
    self->send(st.fresh_sink, prefix_atom_v);
  }
}

void deliver(caf::typed_response_promise<worker_entry_ptr>& rp, caf::result<worker_entry_ptr> r) {
  if (r.flag == caf::rt_value) {
    rp.deliver(r.value.get_as<worker_entry_ptr>(0));
  } else {
    rp.deliver(std::move(r.err));
  }
}

/// Asks the owner of the prompt's prefix group where `sel` goes, without blocking: other
/// selections go on meanwhile. No answer within the timeout (owner gone, slow): decided here.
caf::result<worker_entry_ptr> delegate(self_ptr self, const selection& sel,
                                       protocol::placement_ask ask) {
  auto& st = self->state;
  ask.role = std::string(protocol::to_string(st.role));
  ++st.placement_delegated;
  auto rp = self->make_response_promise<worker_entry_ptr>();
  self->request(st.placement.delegate, st.placement_timeout, placement_atom_v, std::move(ask))
      .then(
          [self, rp, sel](protocol::placement_answer& a) mutable {
            if (a.worker.empty()) {
              ++self->state.placement_failed;
              return deliver(rp, select(self, sel, pick_how::local));
            }
            deliver(rp, select(self, sel, pick_how::placed, a.worker));
          },
          [self, rp, sel](caf::error&) mutable {
            ++self->state.placement_failed;
            deliver(rp, select(self, sel, pick_how::local));
          });
  return rp;
}

/// The strategy sees the latest snapshot (snapshots are taken in as they come; the strategy
/// catches up once, before it is asked anything).
void catch_up(self_ptr self) {
  auto& st = self->state;
  if (!st.fleet_seen) {
    auto change = st.pending_known ? st.pending.change() : nullptr;
    st.strat->on_fleet(*st.fleet, change.get(), st.role);
    st.fleet_seen = true;
  }
}

/// Changes a policy composes before its strategy takes them in anyway: a pick after a burst
/// of registrations by POST applies them once, not one registration at a time.
constexpr std::size_t max_pending = 1024;

caf::result<worker_entry_ptr> select(self_ptr self, const selection& sel, pick_how how,
                                     std::string_view placed) {
  auto& st = self->state;
  catch_up(self);
  // The candidates come from the index: no look at workers of other models or roles.
  auto l = candidates_of(*st.fleet, sel);
  if (!l.group) {
    ++st.counts->refused;
    return no_group(sel);
  }
  if (!sel.target.empty()) {
    return select_target(self, sel, l);
  }
  auto& cands = *l.cands;
  std::size_t k = preferred(cands, sel);
  if (k == strategy::npos && !cands.empty()) {
    if (how == pick_how::placed) {
      k = st.strat->place(cands, sel, placed);
    } else if (how == pick_how::any && st.placement_on && st.placement.delegate &&
               !st.placement.owners.alone()) {
      protocol::placement_ask ask;
      if (st.strat->placement_query(cands, sel, st.placement_all, ask)) {
        // `first` asks place new groups: all of them by one placer; `all`: each group's owner.
        if (const auto& owner = st.placement_all ? st.placement.owners.owner(ask.head)
                                                 : st.placement.owners.placer();
            owner != st.placement.owners.self()) {
          ask.owner = owner;
          return delegate(self, sel, std::move(ask));
        }
        ++st.placement_own; // this node owns the group: its own pick is the owner's
      }
    }
    if (k == strategy::npos) {
      k = st.strat->pick(cands, sel);
    }
    if (k == strategy::npos) {
      if (auto why = st.strat->refusal(); !why.empty()) {
        ++st.counts->refused;
        return make_caf_error(protocol::error_code::no_worker_available, std::move(why));
      }
    }
    tell_fresh(self);
  }
  if (k == strategy::npos) {
    ++st.counts->refused;
    return none_eligible(l, sel);
  }
  ++st.counts->picks;
  return worker_entry_ptr{cands[k]->shared_from_this()};
}

/// The `n`-th worker (registration order) of role `sel.role` serving `sel.model`, whatever its
/// provider; nullptr past the end. Read from the group when one provider has all of them,
/// else (rare) from the fleet's list.
const worker_entry* nth_worker(const fleet_snapshot& fleet, const candidate_group& g,
                               const selection& sel, std::size_t n) {
  if ((g.providers & (g.providers - 1)) == 0) {
    for (auto& list : g.by_provider) {
      if (!list.empty()) {
        return n < list.size() ? list[n] : nullptr;
      }
    }
    return nullptr;
  }
  for (auto& w : fleet.workers) {
    if (w->spec.type == sel.role && w->serves(sel.model) && !w->models.empty() && n-- == 0) {
      return w.get();
    }
  }
  return nullptr;
}

/// The worker `sel.target` names, when it may take the request (a candidate of this pick).
caf::result<worker_entry_ptr> select_target(self_ptr self, const selection& sel,
                                            const pick_list& l) {
  auto& st = self->state;
  const auto& t = sel.target;
  const worker_entry* w = nullptr;
  if (t.size() <= 9 &&
      std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    // smg's form: an index among the workers serving the model.
    w = nth_worker(*st.fleet, *l.group, sel, std::stoul(t));
  } else {
    // By id or URL: among the model's workers of this role first (no look at the others).
    for (auto& list : l.group->by_provider) {
      for (auto* c : list) {
        if (c->id == t || c->spec.url == t) {
          w = c;
          break;
        }
      }
      if (w) {
        break;
      }
    }
    if (!w) {
      // Rare: a worker of the other role (or of another model) is named.
      for (auto& e : st.fleet->workers) {
        if (e->id == t || e->spec.url == t) {
          w = e.get();
          break;
        }
      }
      if (w && w->spec.type != sel.role) {
        // The other half of a prefill/decode pair is targeted: this half picks as usual.
        auto rest = sel;
        rest.target.clear();
        return select(self, rest);
      }
    }
  }
  auto model = sel.model.empty() ? std::string{} : " serving model '" + sel.model + "'";
  if (!w || !w->serves(sel.model) || w->spec.type != sel.role) {
    ++st.counts->refused;
    return make_caf_error(protocol::error_code::bad_request,
                          "X-SMG-Target-Worker '" + t + "' names no " +
                              std::string(protocol::to_string(sel.role)) + " worker" + model);
  }
  if (!eligible(*w, sel) || w->spec.provider != l.only) {
    ++st.counts->refused;
    return make_caf_error(protocol::error_code::no_worker_available,
                          "the target worker " + w->id + " (X-SMG-Target-Worker '" + t +
                              "') cannot take the request now (" +
                              (w->spec.provider != l.only
                                   ? "its provider may not serve this request"
                               : w->live->routable() ? "it failed this request already"
                                                     : "unhealthy or its circuit open") +
                              ")");
  }
  ++st.counts->picks;
  ++st.counts->targeted;
  return worker_entry_ptr{w->shared_from_this()};
}

policy_actor::behavior_type policy(self_ptr self, std::string strategy_name,
                                   protocol::worker_type role, policy_config cfg,
                                   std::shared_ptr<strategy> strat,
                                   std::shared_ptr<pick_counts> counts) {
  auto& st = self->state;
  st.role = role;
  st.strat = strat ? std::move(strat)
                   : make_strategy(strategy_name, cfg, [self] { return self->clock().now(); });
  st.counts = std::move(counts);
  st.placement_on = cfg.cluster_placement == "first" || cfg.cluster_placement == "all";
  st.placement_all = cfg.cluster_placement == "all";
  st.placement_timeout = cfg.placement_timeout;
  return {
      [self](select_atom, const selection& sel) { return select(self, sel); },
      [self](publish_atom, fleet_ptr& fleet) {
        auto& st = self->state;
        // The strategy takes snapshots in before a pick (or an inspection), not as they come:
        // meanwhile their changes are composed, so it applies them in O(workers that came or
        // went) at once; a snapshot that does not follow the one before (none does, in a
        // test's fleet) has the strategy take the fleet in whole, once.
        auto* change = fleet->change.get();
        bool follows = change && change->from == st.fleet->version;
        if (st.fleet_seen) {
          st.pending.notified(st.fleet->version);
          st.pending_known = true;
        }
        st.pending_known = st.pending_known && follows;
        if (st.pending_known) {
          st.pending.merge(*change);
        }
        st.fleet = std::move(fleet);
        st.fleet_seen = false;
        if (st.pending_known && st.pending.size() > max_pending) {
          catch_up(self);
        }
      },
      [self](inspect_atom, mailbox_atom) -> std::uint64_t { return self->mailbox().size(); },
      [self](inspect_atom) {
        auto& st = self->state;
        catch_up(self);
        auto state = st.strat->describe();
        nlohmann::json j{{"kind", "policy"},
                         {"name", "policy:" + std::string(protocol::to_string(st.role))},
                         {"id", self->id()},
                         {"strategy", st.strat->name()},
                         {"role", protocol::to_string(st.role)},
                         {"picks", st.counts->picks.load()},
                         {"targeted", st.counts->targeted.load()},
                         {"refused", st.counts->refused.load()},
                         {"fleet_version", st.fleet->version},
                         {"mailbox_size", self->mailbox().size()}};
        if (st.placement_on || st.placement_answered > 0) {
          j["placement_owners"] = st.placement.owners.size();
          j["placement_delegated"] = st.placement_delegated;
          j["placement_failed"] = st.placement_failed;
          j["placement_own"] = st.placement_own;
          j["placement_answered"] = st.placement_answered;
        }
        // The listing (/admin/actors) shows scalar fields only: the strategy's state is
        // repeated flat, one level deep (`tree_bytes.w-3f9c2a1b`, `ring_points`).
        for (auto& [key, value] : state.items()) {
          if (value.is_object()) {
            for (auto& [sub, v] : value.items()) {
              if (!v.is_structured()) {
                j[key + "." + sub] = v;
              }
            }
          } else if (!value.is_structured()) {
            j[key] = value;
          }
        }
        j["state"] = std::move(state);
        return j.dump();
      },
      [self](prefix_atom, bool fresh_only) {
        prefix_drain out;
        self->state.strat->take_prefixes(out, fresh_only);
        self->state.fresh_told = false;
        return out;
      },
      [self](prefix_atom, const protocol::prefix_update& update) {
        catch_up(self); // the update may name workers of a snapshot not yet taken in
        self->state.strat->merge_prefixes(update);
      },
      [self](prefix_atom, prefix_sink& sink) { self->state.fresh_sink = std::move(sink); },
      [self](placement_atom, const protocol::placement_ask& ask) {
        auto& st = self->state;
        catch_up(self); // the ask may name workers of a snapshot not yet taken in
        protocol::placement_answer a{ask.id, st.strat->decide(ask)};
        ++st.placement_answered;
        tell_fresh(self);
        return a;
      },
      [self](placement_atom, placement_setup& s) { self->state.placement = std::move(s); },
  };
}

} // namespace

direct_picker::direct_picker(std::shared_ptr<strategy> strat, std::shared_ptr<pick_counts> counts,
                             std::shared_ptr<const fleet_view> fleet)
    : strat_(std::move(strat)), counts_(std::move(counts)), fleet_(std::move(fleet)) {}

std::optional<caf::expected<worker_entry_ptr>> direct_picker::pick(const selection& sel) const {
  if (!sel.target.empty()) {
    return std::nullopt;
  }
  // What the policy actor's `select` does for a concurrent strategy, which never refuses on
  // its own, keeps no prefix view and places nothing: the same answers, from the view's
  // snapshot (the one the request itself read; the actor's may lag it by a message).
  auto fleet = fleet_->get();
  auto l = candidates_of(*fleet, sel);
  if (!l.group) {
    ++counts_->refused;
    return caf::expected<worker_entry_ptr>{no_group(sel)};
  }
  auto& cands = *l.cands;
  auto k = preferred(cands, sel);
  if (k == strategy::npos && !cands.empty()) {
    k = strat_->pick(cands, sel);
  }
  if (k == strategy::npos) {
    ++counts_->refused;
    return caf::expected<worker_entry_ptr>{none_eligible(l, sel)};
  }
  ++counts_->picks;
  return caf::expected<worker_entry_ptr>{cands[k]->shared_from_this()};
}

policy_link make_policy_link(caf::actor_system& sys, const std::string& strategy_name,
                             protocol::worker_type role, const policy_config& cfg,
                             std::shared_ptr<const fleet_view> fleet) {
  std::shared_ptr<strategy> strat = make_strategy(strategy_name, cfg);
  if (!strat) {
    throw std::invalid_argument("unknown policy '" + strategy_name + "'");
  }
  auto counts = std::make_shared<pick_counts>();
  policy_link out;
  if (!fleet || !strat->concurrent()) {
    strat = nullptr; // the actor makes its own, on its clock
  } else {
    out.picker = std::make_shared<direct_picker>(strat, counts, std::move(fleet));
  }
  out.actor = sys.spawn(policy, strategy_name, role, cfg, std::move(strat), std::move(counts));
  return out;
}

policy_actor make_policy(caf::actor_system& sys, const std::string& strategy_name,
                         protocol::worker_type role, const policy_config& cfg) {
  return make_policy_link(sys, strategy_name, role, cfg, nullptr).actor;
}

std::vector<std::string> strategy_names() {
  return {"round_robin", "random",      "power_of_two", "cache_aware", "consistent_hash",
          "least_load",  "prefix_hash", "manual",       "bucket"};
}

std::vector<std::string> accepted_strategy_names() {
  auto names = strategy_names();
  names.emplace_back("consistent_hashing");
  return names;
}

} // namespace troupe::actors
