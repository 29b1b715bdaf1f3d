#include "actors/ask.hpp"
#include "tests/fakes/actor_system.hpp"

#include <caf/event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <string>

// `ask` and the actors below are spawned from a function without further arguments. CAF 0.17.6
// does that through a null pointer (UBSan stops the sanitizer build there; the build includes
// cmake/caf_spawn_without_args.hpp, which these cases need to pass under it).

TEST_CASE("ask brings back the answer of an actor spawned from a function without arguments") {
  troupe::test::actor_system_fixture fx;
  auto with_self = fx.keep(fx.sys.spawn(
      [](caf::event_based_actor*) -> caf::behavior { return {[](int x) { return x + 1; }}; }));
  auto without_self = fx.keep(fx.sys.spawn(
      []() -> caf::behavior { return {[](const std::string& s) { return s + "!"; }}; }));
  auto one = fx.ask<int>(with_self, 41);
  REQUIRE(one);
  CHECK(*one == 42);
  auto two = fx.ask<std::string>(without_self, std::string{"hi"});
  REQUIRE(two);
  CHECK(*two == "hi!");
}
