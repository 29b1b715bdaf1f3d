#include "cluster/membership.hpp"

#include <algorithm>

namespace troupe::cluster {

std::string_view to_string(member_state s) noexcept {
  switch (s) {
  case member_state::up:
    return "up";
  case member_state::suspect:
    return "suspect";
  case member_state::down:
    return "down";
  }
  return "down";
}

member_table::heard_result member_table::heard(const std::string& name, std::uint64_t inc,
                                               clock::time_point now,
                                               std::chrono::system_clock::time_point wall) {
  auto [it, fresh] = members_.try_emplace(name);
  auto& m = it->second;
  m.name = name;
  m.last_heard = now;
  auto result = heard_result::known;
  if (fresh || m.state == member_state::down) {
    result = heard_result::joined;
  } else if (inc != 0 && m.incarnation != 0 && inc != m.incarnation) {
    result = heard_result::restarted;
  }
  if (result != heard_result::known) {
    // Whatever the previous incarnation reported is void.
    m.loads.clear();
    m.load_seq = 0;
    m.reason.clear();
  }
  if (inc != 0) {
    m.incarnation = inc;
  }
  if (m.state != member_state::up) {
    if (result == heard_result::known) {
      result = heard_result::recovered;
    }
    m.state = member_state::up;
    m.since = wall;
  }
  return result;
}

bool member_table::down(const std::string& name, std::string reason,
                        std::chrono::system_clock::time_point wall) {
  auto it = members_.find(name);
  if (it == members_.end() || it->second.state == member_state::down) {
    return false;
  }
  auto& m = it->second;
  m.state = member_state::down;
  m.since = wall;
  m.reason = std::move(reason);
  m.loads.clear();
  return true;
}

bool member_table::report(const std::string& name, const protocol::load_report& r) {
  auto it = members_.find(name);
  if (it == members_.end() || it->second.state == member_state::down) {
    return false;
  }
  auto& m = it->second;
  if (r.seq != 0 && r.seq <= m.load_seq) {
    return false; // reordered or replayed
  }
  m.load_seq = r.seq;
  m.registry_digest = r.registry_digest;
  m.registry_version = r.registry_version;
  m.shared_version = r.shared_version;
  m.workers = r.workers;
  std::map<std::string, int> loads;
  for (auto& [id, n] : r.loads) {
    if (n > 0) {
      loads[id] += n;
    }
  }
  if (loads == m.loads) {
    return false;
  }
  m.loads = std::move(loads);
  return true;
}

std::vector<std::string> member_table::expire(clock::time_point now,
                                              std::chrono::system_clock::time_point wall) {
  std::vector<std::string> changed;
  for (auto it = members_.begin(); it != members_.end();) {
    auto& m = it->second;
    auto silent = now - m.last_heard;
    if (m.state != member_state::down && silent >= timing_.down_after) {
      m.state = member_state::down;
      m.since = wall;
      m.reason =
          "silent for " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()) +
          " ms";
      m.loads.clear();
      changed.push_back(m.name);
    } else if (m.state == member_state::up && silent >= timing_.suspect_after) {
      m.state = member_state::suspect;
      m.since = wall;
      changed.push_back(m.name);
    }
    if (m.state == member_state::down && silent >= timing_.forget_after) {
      it = members_.erase(it);
    } else {
      ++it;
    }
  }
  return changed;
}

std::unordered_map<std::string, int> member_table::remote_loads() const {
  std::unordered_map<std::string, int> out;
  for (auto& [name, m] : members_) {
    if (m.state != member_state::up) {
      continue; // a suspect member may be hung: its last word no longer steers policies
    }
    for (auto& [id, n] : m.loads) {
      out[id] += n;
    }
  }
  return out;
}

member* member_table::find(const std::string& name) {
  auto it = members_.find(name);
  return it == members_.end() ? nullptr : &it->second;
}

std::size_t member_table::count(member_state s) const {
  return static_cast<std::size_t>(std::count_if(members_.begin(), members_.end(),
                                                [s](auto& kv) { return kv.second.state == s; }));
}

} // namespace troupe::cluster
