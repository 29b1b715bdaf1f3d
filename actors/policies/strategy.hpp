#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "actors/fleet.hpp"

namespace troupe::actors {

struct selection;

/// How a policy picks one worker among the routable candidates of a request.
class strategy {
public:
  virtual ~strategy() = default;

  /// The name `--policy` uses.
  virtual std::string_view name() const noexcept = 0;

  /// An index into `candidates`, which is non-empty and holds routable workers only.
  virtual std::size_t pick(const std::vector<const worker_entry*>& candidates,
                           const selection& sel) = 0;

  /// The strategy's own state for the admin endpoint (cursor, ...).
  virtual nlohmann::json describe() const = 0;
};

/// Each worker in turn.
std::unique_ptr<strategy> make_round_robin();

/// A uniformly random worker.
std::unique_ptr<strategy> make_random();

/// The less loaded of two random workers (load = requests in flight).
std::unique_ptr<strategy> make_power_of_two();

/// The strategy named `name`, or nullptr.
std::unique_ptr<strategy> make_strategy(std::string_view name);

} // namespace troupe::actors
