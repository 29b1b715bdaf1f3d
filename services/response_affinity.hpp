#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace troupe::services {

/// Which worker stores which Responses API object. A worker keeps the responses it created, so
/// `GET/DELETE /v1/responses/{id}`, `.../cancel`, `.../input_items` and a create continuing
/// `previous_response_id` must reach that worker. Bounded: the oldest ids are forgotten first
/// (their requests then go wherever the policy sends them). Thread-safe: response sinks write
/// it from exchange strands, request actors read it.
class response_affinity {
public:
  /// A map remembering at most `capacity` ids.
  explicit response_affinity(std::size_t capacity = 100000) : capacity_(capacity) {}

  /// Remembers that `worker_id` stores response `response_id`.
  void remember(std::string response_id, std::string worker_id);

  /// The worker storing `response_id`, if known.
  std::optional<std::string> worker_of(std::string_view response_id) const;

  /// Ids remembered.
  std::size_t size() const;

private:
  std::size_t capacity_;
  mutable std::mutex mx_;
  std::unordered_map<std::string, std::string> workers_;
  std::deque<std::string> order_; ///< Insertion order, for eviction.
};

/// The id of the response a Responses create answered: the `id` of a non-streamed body, or of
/// the `response` in a `response.created` event. Empty when `piece` carries none.
std::string created_response_id(std::string_view piece);

/// An observer of the response to a Responses create served by `worker_id` (for the relay
/// sink, which shows it each body or event): remembers the id it answers.
std::function<void(std::string_view piece)>
remember_response_id(std::shared_ptr<response_affinity> affinity, std::string worker_id);

} // namespace troupe::services
