#include "actors/registry.hpp"
#include "tests/fakes/actor_system.hpp"

#include <boost/asio/io_context.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <random>

using namespace troupe;
using namespace troupe::actors;
using protocol::worker_record;

namespace {

/// What a replication listener received.
struct replicated {
  std::vector<fleet_ptr> snapshots;
  std::vector<worker_record> changes;
};

/// The io_context of the proxies: a base, so it outlives the actor system (the proxies' timers
/// and pools live on it until their actors are gone).
struct io_base {
  boost::asio::io_context ioc;
};

/// Registries on a deterministic actor system. The io_context never runs: worker proxies are
/// spawned but reach no worker, which is all these tests need (registrations, not traffic).
struct registry_fixture : io_base, test::actor_system_fixture {

  ~registry_fixture() { shutdown(); } // before the members the actors use go

  struct node {
    registry_actor registry;
    std::shared_ptr<fleet_view> view;
    std::shared_ptr<replicated> seen;
  };

  node registry(std::string name) {
    node n;
    n.view = std::make_shared<fleet_view>();
    n.seen = std::make_shared<replicated>();
    n.registry = make_registry(sys, ioc, n.view, {}, worker_proxy_config{}, {}, std::move(name));
    at_teardown([r = n.registry] { caf::anon_send(r, stop_atom_v); });
    auto seen = n.seen;
    auto listener =
        sys.spawn([seen](replication_listener::pointer) -> replication_listener::behavior_type {
          return {
              [seen](publish_atom, fleet_ptr& f) { seen->snapshots.push_back(f); },
              [seen](changes_atom, record_batch& rs) {
                seen->changes.insert(seen->changes.end(), rs.begin(), rs.end());
                return std::string{"test listener"};
              },
          };
        });
    caf::anon_send(n.registry, subscribe_atom_v, listener);
    run();
    return n;
  }

  std::string add(const node& n, std::string url) {
    auto id = ask<std::string>(
        n.registry, add_atom_v,
        protocol::worker_spec{
            std::move(url), protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
    return id ? *id : "error";
  }

  bool remove(const node& n, std::string id) {
    auto existed = ask<bool>(n.registry, remove_atom_v, std::move(id));
    return existed && *existed;
  }

  record_batch records(const node& n) {
    auto rs = ask<record_batch>(n.registry, records_atom_v);
    return rs ? std::move(*rs) : record_batch{};
  }

  void merge(const node& n, record_batch rs) {
    caf::anon_send(n.registry, merge_atom_v, std::move(rs));
    run();
  }
};

std::vector<std::string> urls(const fleet_view& v) {
  std::vector<std::string> out;
  for (auto& w : v.get()->workers) {
    out.push_back(w->spec.url);
  }
  return out;
}

worker_record record(std::string id, std::string url, std::uint64_t version, std::string origin,
                     bool deleted = false) {
  worker_record r;
  r.id = std::move(id);
  r.spec.url = std::move(url);
  r.version = version;
  r.origin = std::move(origin);
  r.deleted = deleted;
  r.stamp_ms = static_cast<std::int64_t>(version);
  return r;
}

} // namespace

TEST_CASE("worker ids follow the url, so every node gives a worker the same id") {
  CHECK(worker_id_for("http://h:1") == worker_id_for("http://h:1"));
  CHECK(worker_id_for("http://h:1") != worker_id_for("http://h:2"));
  CHECK(worker_id_for("http://h:1", 1) != worker_id_for("http://h:1"));
  CHECK(worker_id_for("http://h:1").size() == 10); // w-xxxxxxxx
}

TEST_CASE_METHOD(registry_fixture, "a registration is a signed record, replicated at once") {
  auto a = registry("node-a");
  auto id = add(a, "http://10.0.0.1:8000");
  CHECK(id == worker_id_for("http://10.0.0.1:8000"));
  REQUIRE(a.seen->changes.size() == 1);
  auto& r = a.seen->changes[0];
  CHECK(r.id == id);
  CHECK(r.origin == "node-a");
  CHECK_FALSE(r.deleted);
  CHECK(r.version > 0);
  CHECK(records(a) == record_batch{r});
  auto snap = a.view->get();
  REQUIRE(snap->workers.size() == 1);
  CHECK(snap->workers[0]->origin == "node-a");
  CHECK(snap->shared_version == r.version);
  CHECK(snap->digest == protocol::record_hash(r));
  CHECK(a.seen->snapshots.back() == snap);
}

TEST_CASE_METHOD(registry_fixture, "merged records: the newer version wins, a tombstone stays") {
  auto b = registry("node-b");
  merge(b, {record("w-1", "http://h:1", 100, "node-a")});
  CHECK(urls(*b.view) == std::vector<std::string>{"http://h:1"});
  CHECK(b.seen->changes.empty()); // merged records are not this node's writes

  SECTION("an older copy changes nothing") {
    auto before = b.view->get();
    merge(b, {record("w-1", "http://h:1", 99, "node-z", true)});
    CHECK(b.view->get() == before);
  }
  SECTION("a newer tombstone removes it; the live record arriving late does not revive it") {
    merge(b, {record("w-1", "http://h:1", 101, "node-c", true)});
    CHECK(urls(*b.view).empty());
    merge(b, {record("w-1", "http://h:1", 100, "node-a")});
    CHECK(urls(*b.view).empty());
    auto rs = records(b);
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].deleted);
  }
  SECTION("same version: the greater node name wins on every node") {
    merge(b, {record("w-1", "http://h:1", 100, "node-c", true)});
    CHECK(urls(*b.view).empty());
  }
  SECTION("a local write after a merge orders after it") {
    CHECK(remove(b, "w-1"));
    REQUIRE(b.seen->changes.size() == 1);
    CHECK(b.seen->changes[0].deleted);
    CHECK(b.seen->changes[0].version > 100);
    CHECK(b.seen->changes[0].spec.api_key.empty());
  }
}

TEST_CASE_METHOD(registry_fixture, "registries fed the same records in any order converge") {
  auto a = registry("node-a");
  auto b = registry("node-b");
  record_batch rs{
      record("w-1", "http://h:1", 100, "node-a"), record("w-2", "http://h:2", 105, "node-b"),
      record("w-1", "http://h:1", 110, "node-c", true), record("w-3", "http://h:3", 90, "node-c")};
  for (auto& r : rs) {
    merge(a, {r});
  }
  for (auto it = rs.rbegin(); it != rs.rend(); ++it) {
    merge(b, {*it});
  }
  CHECK(records(a) == records(b));
  CHECK(a.view->get()->digest == b.view->get()->digest);
  CHECK(a.view->get()->shared_version == 110);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  CHECK(sorted(urls(*a.view)) == std::vector<std::string>{"http://h:2", "http://h:3"});
  CHECK(sorted(urls(*b.view)) == sorted(urls(*a.view)));
}

TEST_CASE_METHOD(registry_fixture,
                 "one version with two contents: both registries keep the same one") {
  auto a = registry("node-a");
  auto b = registry("node-b");
  auto one = record("w-1", "http://h:1", 100, "node-c");
  auto other = one;
  other.models = {"another-model"};
  merge(a, {one});
  merge(a, {other});
  merge(b, {other});
  merge(b, {one});
  CHECK(records(a) == records(b));
  CHECK(a.view->get()->digest == b.view->get()->digest);
}

TEST_CASE_METHOD(registry_fixture, "a merge answers with the records it took") {
  auto a = registry("node-a");
  merge(a, {record("w-1", "http://h:1", 100, "node-b")});
  auto taken = ask<record_batch>(a.registry, merge_atom_v,
                                 record_batch{record("w-1", "http://h:1", 90, "node-b"),
                                              record("w-2", "http://h:2", 95, "node-b")});
  REQUIRE(taken);
  REQUIRE(taken->size() == 1);
  CHECK((*taken)[0].id == "w-2");
}

TEST_CASE_METHOD(registry_fixture,
                 "a removed worker registered again keeps its id and comes back") {
  auto a = registry("node-a");
  auto id = add(a, "http://h:1");
  CHECK(remove(a, id));
  CHECK(add(a, "http://h:1") == id);
  REQUIRE(a.seen->changes.size() == 3);
  CHECK(a.seen->changes[2].version > a.seen->changes[1].version);
  CHECK_FALSE(a.seen->changes[2].deleted);
  CHECK(urls(*a.view) == std::vector<std::string>{"http://h:1"});
  CHECK(add(a, "http://h:1") == "error"); // registered twice: a conflict, as before
}

namespace {

protocol::worker_spec provider(std::string url, std::string key) {
  return {std::move(url),
          protocol::worker_type::regular,
          {},
          {},
          protocol::provider_kind::openai,
          std::move(key),
          {},
          {},
          {}};
}

std::string add_spec(registry_fixture& f, const registry_fixture::node& n,
                     protocol::worker_spec spec) {
  auto id = f.ask<std::string>(n.registry, add_atom_v, std::move(spec));
  return id ? *id : "error";
}

const worker_entry* entry(const fleet_view& v, std::string_view url) {
  static fleet_ptr keep;
  keep = v.get();
  for (auto& w : keep->workers) {
    if (w->spec.url == url) {
      return w.get();
    }
  }
  return nullptr;
}

} // namespace

TEST_CASE_METHOD(registry_fixture,
                 "a record sent without its api key takes the key this node holds") {
  auto b = registry("node-b");
  auto id = add_spec(*this, b, provider("http://p.example:8000", "sk-b"));
  REQUIRE(id != "error");
  auto mine = records(b).at(0);
  // node-a writes a newer version (a model card) over a link that carries no keys.
  auto theirs = mine;
  theirs.version += 10;
  theirs.origin = "node-a";
  theirs.models = {"gpt-x"};
  theirs.spec.api_key.clear();
  theirs.key_withheld = true;
  merge(b, {theirs});
  auto* w = entry(*b.view, "http://p.example:8000");
  REQUIRE(w);
  CHECK(w->spec.api_key == "sk-b");
  CHECK_FALSE(w->key_missing);
  CHECK(w->models == std::vector<std::string>{"gpt-x"});
  CHECK(records(b).at(0).spec.api_key == "sk-b");
  CHECK(records(b).at(0).version == theirs.version);
}

TEST_CASE_METHOD(registry_fixture,
                 "a worker whose key did not arrive lacks it until this node is given it") {
  auto b = registry("node-b");
  auto r = record(worker_id_for("http://q.example:8000"), "http://q.example:8000", 100, "node-a");
  r.spec.provider = protocol::provider_kind::openai;
  r.key_withheld = true;
  merge(b, {r});
  auto* w = entry(*b.view, "http://q.example:8000");
  REQUIRE(w);
  CHECK(w->key_missing);
  CHECK(w->spec.api_key.empty());
  auto changes = b.seen->changes.size();

  SECTION("registering it again with the key supplies the key here only") {
    CHECK(add_spec(*this, b, provider("http://q.example:8000", "sk-q")) == r.id);
    w = entry(*b.view, "http://q.example:8000");
    REQUIRE(w);
    CHECK(w->spec.api_key == "sk-q");
    CHECK_FALSE(w->key_missing);
    CHECK(b.seen->changes.size() == changes); // not a new write: nothing to replicate
    CHECK(records(b).at(0).version == 100);
  }
  SECTION("registering it again without a key is still a conflict") {
    CHECK(add_spec(*this, b, provider("http://q.example:8000", "")) == "error");
    CHECK(entry(*b.view, "http://q.example:8000")->key_missing);
  }
  SECTION("a key given by flag before the record arrived is used") {
    auto c = registry("node-c");
    CHECK(add_spec(*this, c, provider("http://q.example:8000", "sk-c")) != "error");
    auto newer = r;
    newer.version = records(c).at(0).version + 1;
    merge(c, {newer});
    REQUIRE(c.view->get()->workers.size() == 1);
    w = entry(*c.view, "http://q.example:8000");
    REQUIRE(w);
    CHECK(w->version == newer.version);
    CHECK(w->spec.api_key == "sk-c");
    CHECK_FALSE(w->key_missing);
  }
}

namespace {

/// Follows the snapshots `seen` got by their changes, from the first one (taken whole), and
/// checks each change leads from the snapshot before it to its own.
void check_chain(const replicated& seen) {
  REQUIRE_FALSE(seen.snapshots.empty());
  std::map<const worker_entry*, std::string> followed;
  for (auto& w : seen.snapshots.front()->workers) {
    followed[w.get()] = w->id;
  }
  auto last = seen.snapshots.front()->version;
  for (std::size_t i = 1; i < seen.snapshots.size(); ++i) {
    auto& s = *seen.snapshots[i];
    REQUIRE(s.change);
    REQUIRE(s.change->from == last);
    for (auto& r : s.change->removed) {
      auto it = followed.find(r.entry);
      REQUIRE(it != followed.end());
      CHECK(it->second == r.id);
      followed.erase(it);
    }
    for (auto* w : s.change->added) {
      REQUIRE(followed.emplace(w, w->id).second);
    }
    std::map<const worker_entry*, std::string> now;
    for (auto& w : s.workers) {
      now[w.get()] = w->id;
    }
    REQUIRE(followed == now);
    last = s.version;
  }
}

} // namespace

TEST_CASE_METHOD(registry_fixture,
                 "each snapshot carries the change from the one notified before it") {
  auto a = registry("node-a");
  std::mt19937_64 rng{7};
  std::vector<std::string> live;
  int next = 0;
  for (int round = 0; round < 40; ++round) {
    // A burst: several writes in the mailbox at once build one snapshot.
    for (int j = 0, n = 1 + static_cast<int>(rng() % 6); j < n; ++j) {
      auto what = rng() % 4;
      if (what == 0 || live.size() < 2) {
        auto url = "http://10.0.1." + std::to_string(next++) + ":8000";
        caf::anon_send(
            a.registry, add_atom_v,
            protocol::worker_spec{url, protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
        live.push_back(worker_id_for(url));
      } else if (what == 1) {
        auto k = rng() % live.size();
        caf::anon_send(a.registry, remove_atom_v, live[k]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        // A new model card: the entry is replaced.
        caf::anon_send(a.registry, models_atom_v, live[rng() % live.size()],
                       std::vector<std::string>{"m" + std::to_string(rng() % 3)});
      }
    }
    run();
  }
  CHECK(a.view->get()->workers.size() == live.size());
  CHECK(a.seen->snapshots.size() > 10);
  check_chain(*a.seen);
}

TEST_CASE_METHOD(registry_fixture, "a change does not keep a removed worker's entry alive") {
  auto a = registry("node-a");
  auto id = add(a, "http://h:1");
  add(a, "http://h:2");
  std::weak_ptr<const worker_entry> gone;
  for (auto& w : a.view->get()->workers) {
    if (w->id == id) {
      gone = w;
    }
  }
  REQUIRE_FALSE(gone.expired());
  CHECK(remove(a, id));
  run();
  auto last = a.seen->snapshots.back();
  check_chain(*a.seen);
  a.seen->snapshots.clear(); // the older snapshots held it
  REQUIRE(last->change);
  REQUIRE(last->change->removed.size() == 1);
  CHECK(last->change->removed[0].id == id);
  CHECK(last->change->removed[0].url == "http://h:1");
  CHECK(gone.expired());
}

TEST_CASE_METHOD(registry_fixture,
                 "the registry stopping publishes an empty fleet with no change") {
  auto a = registry("node-a");
  add(a, "http://h:1");
  caf::anon_send(a.registry, stop_atom_v);
  run();
  auto last = a.seen->snapshots.back();
  CHECK(last->workers.empty());
  CHECK_FALSE(last->change);
}
