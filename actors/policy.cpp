#include "actors/policy.hpp"

#include "actors/errors.hpp"
#include "actors/policies/strategy.hpp"

#include <algorithm>
#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace troupe::actors {

namespace {

struct policy_state {
  static inline const char* name = "policy";

  protocol::worker_type role = protocol::worker_type::regular;
  std::unique_ptr<strategy> strat;
  fleet_ptr fleet = std::make_shared<const fleet_snapshot>();
  std::uint64_t picks = 0;
  std::uint64_t targeted = 0;                  ///< Picks an X-SMG-Target-Worker header made.
  std::uint64_t refused = 0;                   ///< Selections that found no worker they may use.
  std::vector<const worker_entry*> candidates; ///< Scratch, reused across selections.
  std::vector<std::size_t> positions;          ///< Fleet index of each candidate.
  prefix_sink fresh_sink;                      ///< Told when picks placed new prefix blocks.
  bool fresh_told = false;                     ///< Told since the last take.
};

using self_ptr = policy_actor::stateful_pointer<policy_state>;

/// A set of providers, as bits.
using provider_set = unsigned;

constexpr provider_set bit(protocol::provider_kind p) {
  return 1u << static_cast<unsigned>(p);
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

caf::result<worker_entry_ptr> select_target(self_ptr self, const selection& sel);

caf::result<worker_entry_ptr> select(self_ptr self, const selection& sel) {
  auto& st = self->state;
  auto& cands = st.candidates;
  cands.clear();
  st.positions.clear();
  bool known = false;       // some worker of this role serves the model, routable or not
  provider_set present = 0; // providers of those workers, routable or not: a provider that is
                            // down must not hand its requests (and credentials) to another
  auto& workers = st.fleet->workers;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    auto& w = workers[i];
    if (w->spec.type != sel.role || !w->serves(sel.model)) {
      continue;
    }
    known = true;
    present |= bit(w->spec.provider);
    if (!w->live->routable() ||
        std::find(sel.exclude.begin(), sel.exclude.end(), w->id) != sel.exclude.end()) {
      continue;
    }
    cands.push_back(w.get());
    st.positions.push_back(i);
  }
  bool mixed = (present & (present - 1)) != 0;
  if (mixed) {
    auto only = eligible_provider(present, sel.provider);
    std::size_t kept = 0;
    for (std::size_t k = 0; k < cands.size(); ++k) {
      if (cands[k]->spec.provider == only) {
        cands[kept] = cands[k];
        st.positions[kept] = st.positions[k];
        ++kept;
      }
    }
    cands.resize(kept);
    st.positions.resize(kept);
    if (cands.empty()) {
      auto what = sel.model.empty() ? std::string{"this request"} : "model '" + sel.model + "'";
      return make_caf_error(protocol::error_code::no_worker_available,
                            "no healthy " +
                                std::string(only == protocol::provider_kind::none
                                                ? "self-hosted"
                                                : protocol::to_string(only)) +
                                " worker is available for " + what + " (it is served by " +
                                provider_names(present) + "; credentials never cross providers)");
    }
  }
  if (cands.empty()) {
    if (!known && !sel.model.empty()) {
      return make_caf_error(protocol::error_code::model_not_found,
                            "the model '" + sel.model + "' does not exist");
    }
    auto what = sel.model.empty() ? std::string{"any model"} : "model '" + sel.model + "'";
    return make_caf_error(protocol::error_code::no_worker_available,
                          "no healthy " + std::string(protocol::to_string(sel.role)) +
                              " worker is available for " + what);
  }
  if (!sel.target.empty()) {
    return select_target(self, sel);
  }
  std::size_t k = cands.size();
  if (!sel.prefer.empty()) {
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (cands[i]->id == sel.prefer) {
        k = i;
        break;
      }
    }
  }
  if (k == cands.size()) {
    k = st.strat->pick(cands, sel);
    if (k >= cands.size()) {
      ++st.refused;
      return make_caf_error(protocol::error_code::no_worker_available, st.strat->refusal());
    }
    if (st.fresh_sink && !st.fresh_told && st.strat->prefixes_fresh()) {
      // A prefix placed where the other nodes do not know it: they should hear of it before
      // they route its next request (docs/cluster.md, "Shared prefix view").
      st.fresh_told = true;
      self->send(st.fresh_sink, prefix_atom_v);
    }
  }
  ++st.picks;
  return workers[st.positions[k]];
}

/// The worker `sel.target` names, when it may take the request (a candidate of this pick).
caf::result<worker_entry_ptr> select_target(self_ptr self, const selection& sel) {
  auto& st = self->state;
  auto& workers = st.fleet->workers;
  const auto& t = sel.target;
  std::size_t index = workers.size();
  if (!t.empty() && t.size() <= 9 &&
      std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    // smg's form: an index among the workers serving the model.
    std::size_t n = std::stoul(t);
    for (std::size_t i = 0; i < workers.size(); ++i) {
      if (workers[i]->spec.type == sel.role && workers[i]->serves(sel.model) && n-- == 0) {
        index = i;
        break;
      }
    }
  } else {
    for (std::size_t i = 0; i < workers.size(); ++i) {
      if (workers[i]->id == t || workers[i]->spec.url == t) {
        index = i;
        break;
      }
    }
    if (index < workers.size() && workers[index]->spec.type != sel.role) {
      // The other half of a prefill/decode pair is targeted: this half picks as usual.
      auto rest = sel;
      rest.target.clear();
      return select(self, rest);
    }
  }
  auto model = sel.model.empty() ? std::string{} : " serving model '" + sel.model + "'";
  if (index == workers.size() || !workers[index]->serves(sel.model)) {
    ++st.refused;
    return make_caf_error(protocol::error_code::bad_request,
                          "X-SMG-Target-Worker '" + t + "' names no " +
                              std::string(protocol::to_string(sel.role)) + " worker" + model);
  }
  auto it = std::find(st.positions.begin(), st.positions.end(), index);
  if (it == st.positions.end()) {
    ++st.refused;
    return make_caf_error(protocol::error_code::no_worker_available,
                          "the target worker " + workers[index]->id + " (X-SMG-Target-Worker '" +
                              t + "') cannot take the request now (" +
                              (workers[index]->live->routable() ? "it failed this request already"
                                                                : "unhealthy or its circuit open") +
                              ")");
  }
  ++st.picks;
  ++st.targeted;
  return workers[index];
}

policy_actor::behavior_type policy(self_ptr self, std::string strategy_name,
                                   protocol::worker_type role, policy_config cfg) {
  auto& st = self->state;
  st.role = role;
  st.strat = make_strategy(strategy_name, cfg, [self] { return self->clock().now(); });
  return {
      [self](select_atom, const selection& sel) { return select(self, sel); },
      [self](publish_atom, fleet_ptr& fleet) {
        auto& st = self->state;
        st.fleet = std::move(fleet);
        st.strat->on_fleet(*st.fleet, st.role);
      },
      [self](inspect_atom) {
        auto& st = self->state;
        auto state = st.strat->describe();
        nlohmann::json j{{"kind", "policy"},
                         {"name", "policy:" + std::string(protocol::to_string(st.role))},
                         {"id", self->id()},
                         {"strategy", st.strat->name()},
                         {"role", protocol::to_string(st.role)},
                         {"picks", st.picks},
                         {"targeted", st.targeted},
                         {"refused", st.refused},
                         {"fleet_version", st.fleet->version},
                         {"mailbox_size", self->mailbox().size()}};
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
        self->state.strat->merge_prefixes(update);
      },
      [self](prefix_atom, prefix_sink& sink) { self->state.fresh_sink = std::move(sink); },
  };
}

} // namespace

policy_actor make_policy(caf::actor_system& sys, const std::string& strategy_name,
                         protocol::worker_type role, const policy_config& cfg) {
  if (!make_strategy(strategy_name, cfg)) {
    throw std::invalid_argument("unknown policy '" + strategy_name + "'");
  }
  return sys.spawn(policy, strategy_name, role, cfg);
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
