#pragma once

// Included first in every translation unit of the sanitizer build (CMakeLists.txt,
// TROUPE_SANITIZE). CAF 0.17.6 spawns an actor from a function with no further arguments by
// keeping a null `std::shared_ptr<std::tuple<>>` for them and dereferencing it to apply the
// function to "all" of them (caf/detail/init_fun_factory.hpp): binding a reference to a null
// pointer, undefined behaviour UBSan reports (and, built with -fno-sanitize-recover, aborts on)
// at the first such spawn, and every test that starts a node or asks an actor makes one
// (`actors/ask.hpp`, `actors/send_later.hpp`, the cluster's node). This specialization of
// CAF's helper for exactly that case calls the function without touching the tuple: the same
// behaviour, no dereference. (CAF fixed it after 0.17; Debian 12 ships 0.17.6.)

#include <caf/behavior.hpp>
#include <caf/detail/init_fun_factory.hpp>
#include <caf/local_actor.hpp>
#include <memory>
#include <tuple>
#include <utility>

namespace caf::detail {

template <class Base, class F, bool ReturnsBehavior, bool HasSelfPtr>
class init_fun_factory_helper<Base, F, std::shared_ptr<std::tuple<>>, ReturnsBehavior, HasSelfPtr>
    final : public init_fun_factory_helper_base {
public:
  init_fun_factory_helper(F fun, std::shared_ptr<std::tuple<>>) : fun_(std::move(fun)) {}

  init_fun_factory_helper(init_fun_factory_helper&&) = default;

  init_fun_factory_helper& operator=(init_fun_factory_helper&&) = default;

  behavior operator()(local_actor* self) final {
    if (hook_ != nullptr) {
      hook_(self);
    }
    if constexpr (HasSelfPtr && ReturnsBehavior) {
      auto res = fun_(static_cast<Base*>(self));
      return std::move(res.unbox());
    } else if constexpr (HasSelfPtr) {
      fun_(static_cast<Base*>(self));
      return behavior{};
    } else if constexpr (ReturnsBehavior) {
      auto res = fun_();
      return std::move(res.unbox());
    } else {
      fun_();
      return behavior{};
    }
  }

private:
  F fun_;
};

} // namespace caf::detail
