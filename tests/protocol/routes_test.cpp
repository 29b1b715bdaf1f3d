#include "protocol/routes.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;

TEST_CASE("the operation table has one row per operation, in enum order") {
  for (int i = 0; i <= static_cast<int>(operation::health_generate); ++i) {
    auto op = static_cast<operation>(i);
    CHECK(info(op).op == op);
    CHECK_FALSE(info(op).name.empty());
  }
}

TEST_CASE("exactly the six PD endpoints are PD-capable; messages speak Anthropic") {
  int pd = 0;
  for (int i = 0; i <= static_cast<int>(operation::health_generate); ++i) {
    pd += info(static_cast<operation>(i)).pd_capable ? 1 : 0;
  }
  CHECK(pd == 6);
  CHECK_FALSE(info(operation::embeddings).pd_capable);
  CHECK(info(operation::messages).format == api_format::anthropic);
  CHECK(info(operation::chat_completions).format == api_format::openai);
}
