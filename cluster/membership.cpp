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
    if (m.state == member_state::up) {
      count(m, -1);
    }
    m.loads.clear();
    m.load_seq = 0;
    m.needs_full = false;
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
    count(m, 1);
  }
  return result;
}

void member_table::count(const member& m, int sign) {
  for (auto& [id, n] : m.loads) {
    auto& sum = sums_[id];
    sum += sign * n;
    if (sum == 0) {
      sums_.erase(id);
    }
    changed_.push_back(id);
  }
}

void member_table::change(member& m, const std::string& id, int to, bool counted) {
  auto it = m.loads.find(id);
  int from = it == m.loads.end() ? 0 : it->second;
  if (from == to) {
    return;
  }
  if (to > 0) {
    m.loads[id] = to;
  } else {
    m.loads.erase(it);
  }
  if (counted) {
    auto& sum = sums_[id];
    sum += to - from;
    if (sum == 0) {
      sums_.erase(id);
    }
    changed_.push_back(id);
  }
}

std::vector<std::string> member_table::take_changed() {
  std::vector<std::string> out;
  out.swap(changed_);
  return out;
}

bool member_table::down(const std::string& name, std::string reason,
                        std::chrono::system_clock::time_point wall) {
  auto it = members_.find(name);
  if (it == members_.end() || it->second.state == member_state::down) {
    return false;
  }
  auto& m = it->second;
  if (m.state == member_state::up) {
    count(m, -1);
  }
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
  bool counted = m.state == member_state::up;
  if (r.full) {
    // A whole report may repeat the last seq (one sent again on request).
    if (r.seq != 0 && r.seq < m.load_seq) {
      return false; // reordered or replayed
    }
  } else if (m.needs_full || r.seq != m.load_seq + 1) {
    m.needs_full = true; // a delta was missed: ignore deltas until a whole report
    return false;
  }
  m.load_seq = r.seq;
  m.registry_digest = r.registry_digest;
  m.registry_version = r.registry_version;
  m.shared_version = r.shared_version;
  m.workers = r.workers;
  bool any = false;
  if (r.full) {
    m.needs_full = false;
    std::map<std::string, int> loads;
    for (auto& [id, n] : r.loads) {
      if (n > 0) {
        loads[id] += n;
      }
    }
    if (loads == m.loads) {
      return false;
    }
    for (auto it = m.loads.begin(); it != m.loads.end();) {
      auto& id = it->first;
      ++it; // `change` may erase it
      if (!loads.count(id)) {
        change(m, std::string{id}, 0, counted);
        any = true;
      }
    }
    for (auto& [id, n] : loads) {
      change(m, id, n, counted);
    }
    return true;
  }
  for (auto& [id, n] : r.loads) {
    auto had = m.loads.find(id);
    if ((had == m.loads.end() ? 0 : had->second) != std::max(n, 0)) {
      change(m, id, std::max(n, 0), counted);
      any = true;
    }
  }
  return any;
}

std::vector<std::string> member_table::expire(clock::time_point now,
                                              std::chrono::system_clock::time_point wall) {
  std::vector<std::string> changed;
  for (auto it = members_.begin(); it != members_.end();) {
    auto& m = it->second;
    auto silent = now - m.last_heard;
    if (m.state != member_state::down && silent >= timing_.down_after) {
      if (m.state == member_state::up) {
        count(m, -1);
      }
      m.state = member_state::down;
      m.since = wall;
      m.reason =
          "silent for " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()) +
          " ms";
      m.loads.clear();
      changed.push_back(m.name);
    } else if (m.state == member_state::up && silent >= timing_.suspect_after) {
      count(m, -1); // a suspect member's load no longer steers
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

member* member_table::find(const std::string& name) {
  auto it = members_.find(name);
  return it == members_.end() ? nullptr : &it->second;
}

std::size_t member_table::count(member_state s) const {
  return static_cast<std::size_t>(std::count_if(members_.begin(), members_.end(),
                                                [s](auto& kv) { return kv.second.state == s; }));
}

} // namespace troupe::cluster
