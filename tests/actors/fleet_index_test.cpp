#include "actors/fleet.hpp"

#include <catch2/catch.hpp>
#include <random>

using namespace troupe;
using namespace troupe::actors;
using protocol::provider_kind;
using protocol::worker_type;

namespace {

constexpr std::array roles{worker_type::regular, worker_type::prefill, worker_type::decode};
constexpr std::array providers{provider_kind::none, provider_kind::openai,
                               provider_kind::anthropic};
const std::vector<std::string> model_pool{"a", "b", "c", "d"};

std::shared_ptr<worker_entry> entry(int n, worker_type role, provider_kind provider,
                                    std::vector<std::string> models) {
  auto w = std::make_shared<worker_entry>();
  w->id = "w" + std::to_string(n);
  w->seq = static_cast<std::uint64_t>(n);
  w->spec.type = role;
  w->spec.provider = provider;
  w->models = std::move(models);
  return w;
}

/// What a scan of `workers` (in this order) says the group of (role, model) is.
candidate_group scan(const std::vector<worker_entry_ptr>& workers, worker_type role,
                     std::string_view model) {
  candidate_group g;
  for (auto& w : workers) {
    if (w->spec.type == role && w->serves(model)) {
      g.by_provider[static_cast<std::size_t>(w->spec.provider)].push_back(w.get());
      g.providers |= provider_bit(w->spec.provider);
    }
  }
  return g;
}

/// The index agrees with a scan for every role and model (and "any"), and so does service_of.
void check_against_scan(const fleet_index& index, const std::vector<worker_entry_ptr>& workers) {
  std::vector<std::string> models = model_pool;
  models.push_back(""); // any model
  models.push_back("never-served");
  for (auto& m : models) {
    model_service expected;
    bool prefill = false;
    bool decode = false;
    for (auto role : roles) {
      auto want = scan(workers, role, m);
      auto* got = index.find(role, m);
      INFO("role " << protocol::to_string(role) << " model '" << m << "'");
      if (want.providers == 0) {
        CHECK(got == nullptr);
        continue;
      }
      REQUIRE(got != nullptr);
      CHECK(got->providers == want.providers);
      for (std::size_t p = 0; p < providers.size(); ++p) {
        CHECK(got->by_provider[p] == want.by_provider[p]);
      }
      expected.known = true;
      expected.regular = expected.regular || role == worker_type::regular;
      prefill = prefill || role == worker_type::prefill;
      decode = decode || role == worker_type::decode;
    }
    expected.pd = prefill && decode;
    auto svc = index.service_of(m);
    CHECK(svc.known == expected.known);
    CHECK(svc.regular == expected.regular);
    CHECK(svc.pd == expected.pd);
  }
}

} // namespace

TEST_CASE("the fleet index agrees with a scan of the fleet under random churn") {
  std::mt19937_64 rng{GENERATE(1u, 2u, 3u)};
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng);
  };
  std::vector<worker_entry_ptr> workers; // in registration order
  fleet_index index;
  int next = 0;
  for (int step = 0; step < 600; ++step) {
    auto op = pick(10);
    if (op < 5 || workers.empty()) {
      // A new worker: random role and provider, zero to three models (duplicates allowed).
      std::vector<std::string> models;
      for (std::size_t i = pick(4); i > 0; --i) {
        models.push_back(model_pool[pick(model_pool.size())]);
      }
      auto w = entry(next++, roles[pick(3)], providers[pick(3)], std::move(models));
      index = index.with(*w);
      workers.push_back(std::move(w));
    } else if (op < 8) {
      auto k = pick(workers.size());
      index = index.without(*workers[k]);
      workers.erase(workers.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      // A new model card: the entry is replaced, in its place (groups keep the fleet's order).
      auto k = pick(workers.size());
      auto w = std::make_shared<worker_entry>(*workers[k]);
      w->models.clear();
      for (std::size_t i = pick(4); i > 0; --i) {
        w->models.push_back(model_pool[pick(model_pool.size())]);
      }
      index = index.replaced(*workers[k], *w);
      workers[k] = std::move(w);
    }
    check_against_scan(index, workers);
  }
  // Built from scratch, the index says the same.
  check_against_scan(fleet_index::of(workers), workers);
}

TEST_CASE("a write rebuilds only the groups of the models the worker serves") {
  auto a1 = entry(1, worker_type::regular, provider_kind::none, {"a"});
  auto b1 = entry(2, worker_type::regular, provider_kind::none, {"b"});
  auto index = fleet_index{}.with(*a1).with(*b1);
  auto a2 = entry(3, worker_type::regular, provider_kind::none, {"a"});
  auto next = index.with(*a2);
  // b's group is the very same object; a's (and "any") are new; the old index is unchanged.
  CHECK(next.find(worker_type::regular, "b") == index.find(worker_type::regular, "b"));
  CHECK(next.find(worker_type::regular, "a") != index.find(worker_type::regular, "a"));
  CHECK(index.find(worker_type::regular, "a")->by_provider[0].size() == 1);
  CHECK(next.find(worker_type::regular, "a")->by_provider[0].size() == 2);
  CHECK(next.find(worker_type::regular, "")->by_provider[0].size() == 3);
  CHECK(next.model_count() == 2);
}

TEST_CASE("a worker without models is in no group; the last one out takes its model along") {
  auto pending = entry(1, worker_type::regular, provider_kind::none, {});
  auto index = fleet_index{}.with(*pending);
  CHECK(index.find(worker_type::regular, "") == nullptr);
  CHECK_FALSE(index.service_of("").known);
  auto p = entry(2, worker_type::prefill, provider_kind::none, {"m"});
  auto d = entry(3, worker_type::decode, provider_kind::none, {"m"});
  index = index.with(*p).with(*d);
  CHECK(index.service_of("m").pd);
  CHECK_FALSE(index.service_of("m").regular);
  index = index.without(*d);
  CHECK_FALSE(index.service_of("m").pd);
  CHECK(index.service_of("m").known);
  index = index.without(*p);
  CHECK_FALSE(index.service_of("m").known);
  CHECK(index.model_count() == 0);
}
