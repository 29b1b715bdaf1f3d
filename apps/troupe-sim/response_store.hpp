#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

namespace troupe::sim {

class generation;

/// A response kept for the `/v1/responses/{id}` endpoints.
struct stored_response {
  nlohmann::json response;           ///< The response object, as `GET` returns it.
  nlohmann::json input_items;        ///< Its input items, as `GET .../input_items` lists them.
  std::string conversation;          ///< Prompt and answer as text: the prefix of a follow-up.
  bool background = false;           ///< Created with `background: true` (so it may be cancelled).
  std::weak_ptr<generation> running; ///< The generation while it runs.
};

/// The responses a worker stored (`store` not false), oldest forgotten first beyond capacity.
class response_store {
public:
  /// A store keeping at most `capacity` responses.
  explicit response_store(std::size_t capacity = 10000) : capacity_(capacity) {}

  /// Stores or replaces `id`.
  void put(const std::string& id, stored_response r);

  /// The response `id`, or null.
  stored_response* find(const std::string& id);

  /// Forgets `id`; false if unknown.
  bool erase(const std::string& id);

  /// Responses held.
  std::size_t size() const noexcept { return items_.size(); }

private:
  std::size_t capacity_;
  std::unordered_map<std::string, stored_response> items_;
  std::deque<std::string> order_;
};

} // namespace troupe::sim
