#include "services/response_affinity.hpp"

#include <catch2/catch.hpp>

using namespace troupe::services;

TEST_CASE("the affinity map remembers response ids, oldest forgotten first") {
  response_affinity a{2};
  a.remember("r1", "w1");
  a.remember("r2", "w2");
  CHECK(a.worker_of("r1") == "w1");
  a.remember("r3", "w1");
  CHECK_FALSE(a.worker_of("r1"));
  CHECK(a.worker_of("r2") == "w2");
  CHECK(a.worker_of("r3") == "w1");
  CHECK(a.size() == 2);
}

TEST_CASE("created response ids come from bodies and response.created events") {
  CHECK(created_response_id(R"({"id":"resp_1","object":"response","output":[]})") == "resp_1");
  CHECK(created_response_id(R"({"id":"chatcmpl_1","object":"chat.completion"})").empty());
  CHECK(created_response_id("event: response.created\ndata: "
                            R"({"type":"response.created","response":{"id":"resp_2"}})"
                            "\n\n") == "resp_2");
  CHECK(created_response_id("event: response.output_text.delta\ndata: {\"delta\":\"x\"}\n\n")
            .empty());
}

TEST_CASE("the observer records the first id only") {
  auto a = std::make_shared<response_affinity>();
  auto observe = remember_response_id(a, "w7");
  observe("event: response.created\ndata: "
          R"({"type":"response.created","response":{"id":"resp_9"}})"
          "\n\n");
  observe(R"({"id":"resp_other","object":"response"})");
  CHECK(a->worker_of("resp_9") == "w7");
  CHECK_FALSE(a->worker_of("resp_other"));
}

TEST_CASE("ids this node learns wait in the outbox for the peers; peers' ids never do") {
  response_affinity a{100};
  a.remember("r0", "w0"); // before sharing: not queued
  a.share_with_peers(2);
  a.remember("r1", "w1");
  a.remember_remote("r2", "w2");
  CHECK(a.worker_of("r2") == "w2");
  auto out = a.take_outbox(10);
  REQUIRE(out.size() == 1);
  CHECK(out[0] == std::pair<std::string, std::string>{"r1", "w1"});
  CHECK(a.take_outbox(10).empty());
  // bounded: the oldest waiting are dropped and counted
  a.remember("r3", "w1");
  a.remember("r4", "w1");
  a.remember("r5", "w1");
  auto c = a.stats();
  CHECK(c.queued == 2);
  CHECK(c.outbox_dropped == 1);
  CHECK(c.from_peers == 1);
  out = a.take_outbox(1);
  REQUIRE(out.size() == 1);
  CHECK(out[0].first == "r4");
  CHECK(a.stats().shared == 2);
  CHECK(a.worker_of("r3") == "w1"); // dropped from the outbox, still remembered here
}

TEST_CASE("remembered ids expire after the ttl") {
  auto now = response_affinity::clock::time_point{} + std::chrono::hours{1};
  response_affinity a{100, std::chrono::seconds{10}};
  a.set_clock([&] { return now; });
  a.remember("r1", "w1");
  now += std::chrono::seconds{6};
  a.remember_remote("r2", "w2");
  CHECK(a.worker_of("r1") == "w1");
  now += std::chrono::seconds{5};
  CHECK_FALSE(a.worker_of("r1")); // 11 s old
  CHECK(a.worker_of("r2") == "w2");
  a.remember("r3", "w3"); // a write sweeps what expired
  CHECK(a.size() == 2);
  CHECK(a.stats().expired == 1);
  // learning an id again renews it
  now += std::chrono::seconds{4};
  a.remember("r2", "w2");
  now += std::chrono::seconds{8};
  a.remember("r4", "w4");
  CHECK(a.worker_of("r2") == "w2");
  CHECK_FALSE(a.worker_of("r3")); // 12 s old: swept
  CHECK(a.size() == 2);
  CHECK(a.stats().expired == 2);
}

TEST_CASE("a snapshot holds the newest ids known, own and peers', oldest first, none expired") {
  auto now = response_affinity::clock::time_point{} + std::chrono::hours{1};
  response_affinity a{3, std::chrono::seconds{10}};
  a.set_clock([&] { return now; });
  a.share_with_peers(10);
  a.remember("r1", "w1");
  now += std::chrono::seconds{6};
  a.remember_remote("r2", "w2");
  a.remember("r3", "w3");
  using pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(a.snapshot(10) == pairs{{"r1", "w1"}, {"r2", "w2"}, {"r3", "w3"}});
  CHECK(a.snapshot(2) == pairs{{"r2", "w2"}, {"r3", "w3"}});
  now += std::chrono::seconds{5};
  a.remember("r4", "w4"); // beyond the capacity: r1 forgotten
  CHECK(a.snapshot(10) == pairs{{"r2", "w2"}, {"r3", "w3"}, {"r4", "w4"}});
  now += std::chrono::seconds{5};
  CHECK(a.snapshot(10) == pairs{{"r4", "w4"}}); // r2 and r3 are 10 s old
  CHECK(a.stats().queued == 3);                 // the outbox is left as it was (r1, r3, r4)
}
