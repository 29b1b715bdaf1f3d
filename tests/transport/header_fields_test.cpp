// first_fields with names resolved once (field_names) finds what a lookup per name finds.

#include "transport/header_fields.hpp"
#include "transport/http_types.hpp"

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace troupe::transport;

namespace {

/// `name` with each letter's case flipped at random.
std::string mixed_case(std::string_view name, std::mt19937& rng) {
  std::string out(name);
  for (auto& c : out) {
    if (rng() % 2 && c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

} // namespace

TEST_CASE("first_fields with resolved names agrees with a lookup per name", "[header_fields]") {
  // Names Beast knows (an integer compare) and names it does not (text), some of the same
  // length as others, in random requests with duplicates and mixed case.
  // A name listed twice takes the field's second occurrence, as a lookup per name of the
  // fields not yet taken would.
  const std::vector<std::string> names{"authorization", "content-type", "x-request-id",
                                       "x-session-id",  "traceparent",  "x-user-id",
                                       "request-id",    "host",         "content-type"};
  const std::vector<std::string_view> pool{
      "authorization", "content-type", "x-request-id", "x-session-id",   "traceparent",
      "x-user-id",     "request-id",   "host",         "content-length", "x-other-id",
      "accept",        "x-trace-id",   "user-agent",   "x-session-ie"};
  const field_names resolved{names};
  REQUIRE(resolved.size() == names.size());
  std::mt19937 rng{7};
  for (int round = 0; round < 500; ++round) {
    request req{boost::beast::http::verb::post, "/v1/chat/completions", 11};
    auto count = rng() % 12;
    for (unsigned i = 0; i < count; ++i) {
      auto name = pool[rng() % pool.size()];
      req.insert(mixed_case(name, rng), "v" + std::to_string(i));
    }
    std::vector<std::optional<std::string_view>> found(names.size());
    first_fields(req, resolved, found);
    for (std::size_t i = 0; i < names.size(); ++i) {
      // The n-th field of that name, n being how often the name came before in the list.
      auto nth =
          std::count(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]);
      std::optional<std::string_view> expected;
      for (const auto& f : req) {
        if (boost::beast::iequals(f.name_string(), names[i]) && nth-- == 0) {
          expected = f.value();
          break;
        }
      }
      INFO("round " << round << " name " << names[i]);
      CHECK(found[i] == expected);
    }
  }
}

TEST_CASE("field_names keeps the names as given, and a list of only known names skips the rest",
          "[header_fields]") {
  const std::array<std::string_view, 2> names{"content-type", "authorization"};
  const field_names resolved{names};
  CHECK(resolved[0] == "content-type");
  CHECK(resolved[1] == "authorization");
  request req{boost::beast::http::verb::get, "/", 11};
  req.insert("X-Custom", "1");
  req.insert("Content-Type", "application/json");
  std::array<std::optional<std::string_view>, 2> found;
  first_fields(req, resolved, found);
  REQUIRE(found[0]);
  CHECK(*found[0] == "application/json");
  CHECK_FALSE(found[1]);
}
