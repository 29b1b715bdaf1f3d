#include "protocol/routes.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace troupe::protocol;

TEST_CASE("the operation table has one row per operation, in enum order") {
  // The table is the bound: a row left out in the middle shows as a row naming the wrong
  // operation (routes.cpp also checks the order when it compiles).
  auto rows = operations();
  REQUIRE_FALSE(rows.empty());
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto op = static_cast<operation>(i);
    CHECK(rows[i].op == op);
    CHECK(&info(op) == &rows[i]);
    CHECK_FALSE(rows[i].name.empty());
    CHECK(names.insert(rows[i].name).second);
    CHECK_FALSE(rows[i].paths.empty());
    CHECK_FALSE(rows[i].method.empty());
  }
}

TEST_CASE("every route belongs to one operation") {
  std::set<std::string> routes;
  for (auto& row : operations()) {
    for (auto path : row.paths) {
      CHECK(routes.insert(std::string(row.method) + " " + std::string(path)).second);
    }
  }
}

TEST_CASE("a body's rules are the first fields the scan watches, its prompt among them") {
  for (auto& row : operations()) {
    INFO(row.name);
    REQUIRE(row.rules.size() <= row.watched.size());
    for (std::size_t i = 0; i < row.rules.size(); ++i) {
      CHECK(row.rules[i].name == row.watched[i]);
    }
    for (auto field : row.prompt) {
      CHECK(std::find(row.watched.begin(), row.watched.end(), field) != row.watched.end());
    }
    if (!row.has_body) {
      CHECK(row.rules.empty());
      CHECK(row.watched.empty());
      CHECK(row.batch == batch_rule::none);
    }
  }
}

TEST_CASE("the six PD endpoints and the pair health check are served by a pair") {
  int pairs = 0;
  for (auto& row : operations()) {
    pairs += row.pd == pd_service::pair ? 1 : 0;
  }
  CHECK(pairs == 7);
  CHECK(info(operation::health_generate).pd == pd_service::pair);
  CHECK(info(operation::embeddings).pd == pd_service::none);
  CHECK(info(operation::get_model_info).pd == pd_service::prefill);
  CHECK(info(operation::responses_get).pd == pd_service::decode);
  CHECK(info(operation::messages).format == api_format::anthropic);
  CHECK(info(operation::chat_completions).format == api_format::openai);
}

TEST_CASE("requests that make model work are limited; lookups and cancels never queue") {
  for (auto& row : operations()) {
    INFO(row.name);
    CHECK(row.limited == row.has_body);
  }
  CHECK_FALSE(info(operation::responses_cancel).limited);
}

TEST_CASE("Responses specifics are data of their rows") {
  CHECK(info(operation::responses_create).creates_response);
  CHECK(info(operation::responses_create).names_response == response_ref::previous);
  for (auto op : {operation::responses_get, operation::responses_delete,
                  operation::responses_cancel, operation::responses_input_items}) {
    CHECK(info(op).names_response == response_ref::path);
    CHECK_FALSE(info(op).creates_response);
  }
  CHECK(info(operation::chat_completions).names_response == response_ref::none);
}
