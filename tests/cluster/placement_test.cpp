// Placement by owner (cluster/placement.cpp, docs/cluster.md) on the deterministic scheduler:
// node "a" with a real cache_aware policy over workers w0..w2, fake peers that say hello, ask
// and answer as member nodes would.

#include "actors/policies/placement_owner.hpp"
#include "actors/policies/shared_prefix_view.hpp"
#include "tests/cluster/cache_aware_fixture.hpp"

using namespace troupe::test::cluster_node;

namespace {

/// The rank seed of `text` as a node keeping 16-byte blocks hashes it (it names the owner).
std::uint64_t head_of(const std::string& text) {
  actors::shared_prefix_view v{{16, 1024, 1024, 1024}};
  v.hash(text);
  return v.head();
}

std::string prompt_of(int n) {
  return "[{\"role\":\"system\",\"content\":\"prompt " + std::to_string(n) + " " +
         std::string(300, 'x') + "\"}]";
}

/// A prompt whose prefix group `owner` owns among the nodes "a" and `members`.
std::string owned_by(const std::string& owner, std::vector<std::string> members, int from = 0) {
  actors::placement_owners owners{"a", members};
  for (int n = from;; ++n) {
    if (owners.owner(head_of(prompt_of(n))) == owner) {
      return prompt_of(n);
    }
  }
}

/// A member name that is (`placer`) or is not the placer of new prefix groups among the nodes
/// "a" and it (`--cluster-placement first` asks the placer).
std::string member_placing(bool placer) {
  for (int n = 0;; ++n) {
    auto name = "m" + std::to_string(n);
    if ((actors::placement_owners{"a", {name}}.placer() == name) == placer) {
      return name;
    }
  }
}

struct placement_fixture : cache_aware_fixture {
  explicit placement_fixture(const std::string& mode = "first") : cache_aware_fixture(mode) {}

  void start() {
    auto c = settings();
    c.max_message_bytes = 8u * 1024 * 1024;
    c.prefix_block_bytes = 16;
    c.placement_timeout = 50ms; // as the policy's (policy_config)
    node_deps deps{registry, view, nullptr, dialer, refusals, {}, {}, {}};
    deps.prefix_policies = {{"regular", policy}};
    fixture::start(std::move(c), std::move(deps));
  }

  /// A member keeping a view of 16-byte blocks; `answers`: its hello says it answers asks.
  fake_peer member(const std::string& name, bool answers = true) {
    return greeted_peer(name, [answers](auto& h) {
      h.prefix_block_bytes = 16;
      h.placement = answers;
    });
  }

  /// Starts a pick of `text` and runs what it sets off; the answer comes when it comes.
  answer<actors::worker_entry_ptr> pick_later(const std::string& text) {
    auto owned = std::make_shared<std::string>(text);
    actors::selection sel;
    sel.prompt.owner = owned;
    sel.prompt.parts = {*owned, {}};
    auto out = ask_later<actors::worker_entry_ptr>(policy, select_atom_v, sel);
    run();
    return out;
  }

  static std::string id_of(const answer<actors::worker_entry_ptr>& a) {
    return *a && **a ? (***a)->id : "error";
  }

  void answer_ask(const fake_peer& p, const std::string& name, std::uint64_t id,
                  std::string worker) {
    cluster_message m;
    m.body = protocol::placement_answer{id, std::move(worker)};
    say(p, name, std::move(m));
  }

  protocol::placement_ask ask_of(const std::string& text, std::uint64_t id) {
    protocol::placement_ask a;
    a.id = id;
    a.role = "regular";
    a.block_bytes = 16;
    a.head = head_of(text);
    a.prompt_bytes = text.size();
    a.chain = chain_of(text);
    a.candidates = {"w0", "w1", "w2"};
    return a;
  }

  json placement_status() { return inspect()["placement"]; }
};

} // namespace

TEST_CASE_METHOD(placement_fixture, "a pick of a new prefix asks the placer and takes its "
                                    "answer; only hashes and worker ids travel") {
  start();
  const auto name = member_placing(true);
  auto b = member(name);
  auto text = prompt_of(1);
  auto got = pick_later(text);
  CHECK_FALSE(*got); // waiting for the placer
  auto asks = received<protocol::placement_ask>(b);
  REQUIRE(asks.size() == 1);
  CHECK(asks[0].role == "regular");
  CHECK(asks[0].block_bytes == 16);
  CHECK(asks[0].chain == chain_of(text));
  CHECK(asks[0].head == head_of(text));
  CHECK(asks[0].candidates == std::vector<std::string>{"w0", "w1", "w2"});
  for (auto& bytes : b.got->raw) {
    CHECK(bytes.find(std::string(16, 'x')) == std::string::npos);
  }
  answer_ask(b, name, asks[0].id, "w2");
  CHECK(id_of(got) == "w2");
  // Another new prefix, of a group this node owns: the placer's answer decides, whatever this
  // node would have chosen.
  auto other = owned_by("a", {name}, 1000);
  auto got2 = pick_later(other);
  asks = received<protocol::placement_ask>(b);
  REQUIRE(asks.size() == 2);
  answer_ask(b, name, asks[1].id, "w1");
  CHECK(id_of(got2) == "w1");
  // The placement is this node's pick now: its next turn follows w2 without asking (first).
  CHECK(pick(text + " and the next turn") == "w2");
  CHECK(received<protocol::placement_ask>(b).size() == 2);
  auto st = placement_status();
  CHECK(st["delegated"] == 2);
  CHECK(st["relayed"] == 2);
  CHECK(st["owners"] == json::array({name}));
  auto p = inspect_policy();
  CHECK(p["placement"]["placed"] == 2);
  CHECK(p["placement"]["asked"] == 2);
}

TEST_CASE_METHOD(placement_fixture, "this node as the placer places new prefixes here, unasked, "
                                    "whichever node owns their groups") {
  start();
  const auto name = member_placing(false);
  auto b = member(name);
  for (auto owner : {"a", name.c_str()}) {
    auto got = pick_later(owned_by(owner, {name}));
    CHECK(id_of(got) != "error"); // at once
  }
  CHECK(received<protocol::placement_ask>(b).empty());
  CHECK(inspect_policy()["placement"]["asked"] == 2); // both new: the placer's (this node's)
}

TEST_CASE_METHOD(placement_fixture, "two members asking for one new prefix get the same worker, "
                                    "and hear of the placement") {
  start();
  auto b = member("b");
  auto c = member("c");
  auto text = prompt_of(7);
  cluster_message m;
  m.body = ask_of(text, 11);
  say(b, "b", m);
  m.body = ask_of(text, 5);
  say(c, "c", m);
  auto from_b = received<protocol::placement_answer>(b);
  auto from_c = received<protocol::placement_answer>(c);
  REQUIRE(from_b.size() == 1);
  REQUIRE(from_c.size() == 1);
  CHECK(from_b[0].id == 11);
  CHECK(from_c[0].id == 5);
  CHECK_FALSE(from_b[0].worker.empty());
  CHECK(from_c[0].worker == from_b[0].worker);
  // The owner recorded the placement as its own pick: the members are told at once, and its
  // own pick of the prompt follows it.
  bool told = false;
  for (auto& u : received<protocol::prefix_update>(c)) {
    for (auto& w : u.workers) {
      told = told || w.worker == from_b[0].worker;
    }
  }
  CHECK(told);
  CHECK(pick(text) == from_b[0].worker);
  CHECK(placement_status()["answered"] == 2);
}

TEST_CASE_METHOD(placement_fixture, "an owner spreads new prefixes it places by load: the worker "
                                    "it gave another node counts as busy until that node reports") {
  start();
  auto b = member("b");
  cluster_message m;
  std::set<std::string> chosen;
  for (int i = 0; i < 3; ++i) {
    m.body = ask_of(prompt_of(100 + i), static_cast<std::uint64_t>(i + 1));
    say(b, "b", m);
  }
  for (auto& a : received<protocol::placement_answer>(b)) {
    chosen.insert(a.worker);
  }
  CHECK(chosen.size() == 3); // three new prefixes at once, on three idle workers
  CHECK(inspect_policy()["placement"]["reserved"] == 3);
  tick();
  tick(); // past the reservation (a gossip interval)
  m.body = ask_of(prompt_of(200), 9);
  say(b, "b", m);
  CHECK(inspect_policy()["placement"]["reserved"] == 1);
}

TEST_CASE_METHOD(placement_fixture, "no answer within the timeout: the pick is decided here; a "
                                    "late answer changes nothing") {
  start();
  const auto name = member_placing(true);
  auto b = member(name);
  auto got = pick_later(prompt_of(1));
  CHECK_FALSE(*got);
  advance(51ms);
  REQUIRE(*got);
  CHECK(id_of(got) != "error");
  auto asks = received<protocol::placement_ask>(b);
  REQUIRE(asks.size() == 1);
  tick(); // the node expires the ask
  answer_ask(b, name, asks[0].id, "w1");
  auto st = placement_status();
  CHECK(st["expired"] == 1);
  CHECK(st["late"] == 1);
  CHECK(inspect_policy()["placement"]["placed"] == 0);
}

TEST_CASE_METHOD(placement_fixture, "an answer naming no candidate of the pick: decided here") {
  start();
  const auto name = member_placing(true);
  auto b = member(name);
  auto got = pick_later(prompt_of(1));
  auto asks = received<protocol::placement_ask>(b);
  REQUIRE(asks.size() == 1);
  answer_ask(b, name, asks[0].id, "w-gone");
  CHECK((id_of(got) == "w0" || id_of(got) == "w1" || id_of(got) == "w2"));
  CHECK(inspect_policy()["placement"]["refused"] == 1);
}

TEST_CASE_METHOD(placement_fixture, "a member whose hello does not say it answers is never asked") {
  start();
  auto old = member("old", false);
  for (int n = 0; n < 8; ++n) {
    auto got = pick_later(prompt_of(n));
    CHECK(id_of(got) != "error"); // at once
  }
  CHECK(received<protocol::placement_ask>(old).empty());
  CHECK(placement_status()["owners"].empty());
}

TEST_CASE_METHOD(placement_fixture, "a placer that left is not asked: new prefixes are placed "
                                    "here") {
  start();
  const auto name = member_placing(true);
  auto b = member(name);
  cluster_message bye;
  bye.body = protocol::cluster_bye{};
  say(b, name, bye);
  auto got = pick_later(prompt_of(1));
  CHECK(id_of(got) != "error"); // at once
  CHECK(received<protocol::placement_ask>(b).empty());
}

namespace {

struct placement_off : placement_fixture {
  placement_off() : placement_fixture("off") {}
};

struct placement_all : placement_fixture {
  placement_all() : placement_fixture("all") {}
};

} // namespace

TEST_CASE_METHOD(placement_off, "with placement off a pick never asks, though the node answers") {
  start();
  auto b = member("b");
  auto got = pick_later(owned_by("b", {"b"}));
  CHECK(id_of(got) != "error"); // at once
  CHECK(received<protocol::placement_ask>(b).empty());
  // It still answers members' asks (its hello says so): their setting is theirs.
  cluster_message m;
  m.body = ask_of(prompt_of(3), 1);
  say(b, "b", m);
  REQUIRE(received<protocol::placement_answer>(b).size() == 1);
  CHECK_FALSE(received<protocol::placement_answer>(b)[0].worker.empty());
}

TEST_CASE_METHOD(placement_all, "with placement all every pick of a prompt is its owner's, held "
                                "or not") {
  start();
  auto b = member("b");
  auto text = owned_by("b", {"b"});
  auto got = pick_later(text);
  auto asks = received<protocol::placement_ask>(b);
  REQUIRE(asks.size() == 1);
  answer_ask(b, "b", asks[0].id, "w0");
  CHECK(id_of(got) == "w0");
  // The next turn: w0 holds it, and b is asked again (b may spill it to a less busy worker).
  got = pick_later(text + " and the next turn");
  asks = received<protocol::placement_ask>(b);
  REQUIRE(asks.size() == 2);
  answer_ask(b, "b", asks[1].id, "w1");
  CHECK(id_of(got) == "w1");
}
