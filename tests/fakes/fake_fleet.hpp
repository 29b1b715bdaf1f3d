#pragma once

// Healthy regular workers in a fleet snapshot, for strategy tests without actors.

#include "actors/fleet.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace troupe::test {

class fake_fleet {
public:
  /// Workers `w0`..`w{n-1}` at `http://w{i}:8000`.
  explicit fake_fleet(int n) {
    for (int i = 0; i < n; ++i) {
      add("w" + std::to_string(i));
    }
  }

  /// Adds worker `id` at `http://{id}:8000`; returns it for tweaking its load.
  actors::worker_entry& add(const std::string& id) {
    auto w = std::make_shared<actors::worker_entry>();
    w->id = id;
    w->seq = ++next_seq_; // registration order, one per worker (as the registry numbers them)
    w->spec.url = "http://" + id + ":8000";
    w->live = std::make_shared<actors::worker_live>();
    w->live->health = actors::health_state::healthy;
    entries.push_back(w);
    return *w;
  }

  /// Removes worker `id`.
  void remove(const std::string& id) {
    std::erase_if(entries, [&](auto& w) {
      if (w->id != id) {
        return false;
      }
      gone_.push_back(w); // freed after the next `published()`: no address given twice
      return true;
    });
  }

  /// Puts a copy of worker `id` in its place (a new model card: a new entry, same worker).
  actors::worker_entry& replace(const std::string& id) {
    for (auto& w : entries) {
      if (w->id == id) {
        gone_.push_back(w);
        w = std::make_shared<actors::worker_entry>(*w);
        return *w;
      }
    }
    throw std::out_of_range(id);
  }

  /// The worker with `id`.
  actors::worker_entry& at(const std::string& id) {
    for (auto& w : entries) {
      if (w->id == id) {
        return *w;
      }
    }
    throw std::out_of_range(id);
  }

  /// All workers as pick candidates.
  std::vector<const actors::worker_entry*> all() const {
    std::vector<const actors::worker_entry*> out;
    for (auto& w : entries) {
      out.push_back(w.get());
    }
    return out;
  }

  /// The workers `ids` as pick candidates.
  std::vector<const actors::worker_entry*> only(const std::vector<std::string>& ids) {
    std::vector<const actors::worker_entry*> out;
    for (auto& id : ids) {
      out.push_back(&at(id));
    }
    return out;
  }

  /// The fleet as the registry publishes it.
  actors::fleet_snapshot snapshot() const {
    actors::fleet_snapshot s;
    s.workers = std::vector<actors::worker_entry_ptr>(entries.begin(), entries.end());
    s.index = actors::fleet_index::of(s.workers);
    return s;
  }

  /// The fleet as the registry publishes it to its listeners: the next version, carrying the
  /// change since the last call (the first one's starts from version 0, never published).
  actors::fleet_snapshot published() {
    auto s = snapshot();
    auto c = std::make_shared<actors::fleet_change>();
    c->from = version_;
    s.version = ++version_;
    std::unordered_set<const actors::worker_entry*> now;
    for (auto& w : entries) {
      now.insert(w.get());
    }
    std::unordered_set<const actors::worker_entry*> before;
    for (auto& g : last_) {
      before.insert(g.entry);
      if (!now.count(g.entry)) {
        c->removed.push_back(g);
      }
    }
    last_.clear();
    for (auto& w : entries) {
      if (!before.count(w.get())) {
        c->added.push_back(w.get());
      }
      last_.push_back({w.get(), w->id, w->spec.url, w->spec.type});
    }
    s.change = std::move(c);
    gone_.clear();
    return s;
  }

  std::vector<std::shared_ptr<actors::worker_entry>> entries;

private:
  std::uint64_t version_ = 0;
  std::vector<actors::fleet_change::gone> last_; ///< The last published snapshot's entries.
  std::vector<std::shared_ptr<actors::worker_entry>> gone_; ///< Removed since.
  std::uint64_t next_seq_ = 0;
};

} // namespace troupe::test
